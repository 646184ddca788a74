import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { setQuery } from '../lib/router.js';
import { ErrorMessage, Form, Page, Pager, Select, TextArea, Time, useResource } from '../lib/ui.js';
import { OutreachNav } from './outreach/subnav.js';

const KIND = { reply: 'Reply', auto_reply: 'Auto-reply', bounce: 'Bounce' };

/**
 * The inbox of replies (GET /api/outreach/emails): one thread per conversation, every mail in it oldest first,
 * the most recently answered thread first; a reply goes out in the thread (POST /api/outreach/emails).
 */
export default function Inbox({ query: search }) {
  const campaignId = search?.get('campaign') ?? '';
  const [cursor, setCursor] = useState();
  const campaigns = useResource((signal) => get('/api/outreach/campaigns?limit=100', { signal }), []);
  const threads = useResource(
    (signal) => get(`/api/outreach/emails${query({ campaignId, cursor, limit: 20 })}`, { signal }),
    [campaignId, cursor],
  );
  const names = new Map((campaigns.data?.campaigns ?? []).map((c) => [c.id, c.name]));

  return html`<${Page} title="Inbox">
    <${OutreachNav} />
    <div class="toolbar">
      <${Select}
        label="Campaign"
        value=${campaignId}
        onChange=${(v) => {
          setCursor();
          setQuery({ campaign: v });
        }}
        options=${[['', 'Every campaign'], ...(campaigns.data?.campaigns ?? []).map((c) => [c.id, c.name])]}
      />
    </div>
    <${ErrorMessage} error=${threads.error} />
    ${threads.loading && !threads.data ? html`<p class="loading">Loading replies…</p>` : null}
    ${
      threads.data
        ? threads.data.threads.length
          ? html`<div class="threads">
              ${threads.data.threads.map(
                (t) =>
                  html`<${Thread} key=${t.threadId} thread=${t} campaign=${names.get(t.campaignId)} onSent=${threads.reload} />`,
              )}
            </div>`
          : html`<p class="empty">No replies yet: they appear here once a mailbox’s inbox is read.</p>`
        : null
    }
    ${
      threads.data
        ? html`<${Pager}
            nextCursor=${threads.data.nextCursor}
            onNext=${setCursor}
            onFirst=${() => setCursor()}
            atFirst=${!cursor}
          />`
        : null
    }
  </${Page}>`;
}

function Thread({ thread, campaign, onSent }) {
  const headingId = `thread-${thread.threadId.replace(/[^a-zA-Z0-9_-]/g, '')}`;
  const [replying, setReplying] = useState(false);
  const [body, setBody] = useState('');
  const lastInbound = [...thread.messages].reverse().find((m) => m.direction === 'inbound' && m.kind !== 'bounce');
  const who = lastInbound?.from ?? thread.messages[0]?.to ?? '';
  const send = async () => {
    await post('/api/outreach/emails', { mailboxId: thread.mailboxId, inReplyTo: lastInbound.messageId, body });
    setBody('');
    setReplying(false);
    onSent();
  };
  return html`<article class="panel thread" aria-labelledby=${headingId}>
    <h2 id=${headingId}>${thread.subject || '(no subject)'}</h2>
    <p class="muted thread-meta">
      ${who}${campaign ? html` · <a href=${`/outreach/${thread.campaignId}`}>${campaign}</a>` : null}
      ${thread.leadId ? html` · <a href=${`/leads/${thread.leadId}`}>Lead</a>` : null}
    </p>
    <ol class="messages" aria-label=${`Messages with ${who}`}>
      ${thread.messages.map(
        (m) => html`<li key=${m.id} class=${`message ${m.direction}`}>
          <div class="message-head">
            <strong>${m.direction === 'outbound' ? (m.step ? `Sent · step ${m.step}` : 'Sent') : (KIND[m.kind] ?? 'Received')}</strong>
            <span>${m.from} → ${m.to}</span>
            <${Time} iso=${m.at} />
            ${m.unconfirmed ? html`<span class="badge">Unconfirmed</span>` : null}
          </div>
          <div class="mail-text">${withLinks(m.text)}</div>
        </li>`,
      )}
    </ol>
    ${
      lastInbound && thread.mailboxId
        ? replying
          ? html`<${Form} onSubmit=${send} submitLabel="Send reply" label=${`Reply to ${who}`}>
              <${TextArea} label="Your reply" value=${body} onInput=${setBody} rows="4" />
            </${Form}>`
          : html`<button type="button" class="secondary" onClick=${() => setReplying(true)}>Reply to ${who}</button>`
        : null
    }
  </article>`;
}

/**
 * The mail's text with its web addresses set apart: links in sequence mail (unsubscribe, tracking) carry a token of
 * their own per mail, so they are marked volatile and screenshots mask them. They are not made clickable: opening
 * one from here would unsubscribe the lead or count an open.
 */
function withLinks(text) {
  return text
    .split(/(https?:\/\/[^\s<>"]+)/)
    .map((part, i) => (i % 2 ? html`<span class="mail-link" data-volatile>${part}</span>` : part));
}
