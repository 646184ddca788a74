import { domainOf } from '../../../shared/mail/address.ts';
import type { DnsResolve } from '../../../shared/mail/dns.ts';
import { dnsResolverOf } from '../../../shared/mail/dns.ts';
import { checkDkim, checkSpf } from '../../../shared/mail/sender-dns.ts';

/**
 * DNS vitals of a sending mailbox's domain (docs/outreach.md "Outreach", Accounts), read through DNS_SERVERS: MX (the
 * domain receives mail, so bounces and replies come back), SPF (authorizes the mailbox's SMTP host), DKIM (a key
 * under the given selector or a common one), DMARC (a policy record).
 */
export interface DnsVital {
  check: 'mx' | 'spf' | 'dkim' | 'dmarc';
  pass: boolean;
  /** What was read (the MX hosts, the TXT record), when there was something. */
  record: string | null;
  message: string;
}

/** Selectors tried when none is given: the defaults of common mail providers and signing tools. */
export const COMMON_DKIM_SELECTORS = ['default', 'google', 'selector1', 'selector2', 'k1', 's1', 'mail', 'dkim'];

const codeOf = (err: unknown) => (err as { code?: string }).code;

export async function dnsVitals(input: {
  email: string;
  smtpHost: string | null;
  dkimSelector?: string;
  servers: string[] | undefined;
}): Promise<{ domain: string; checks: DnsVital[]; passed: number }> {
  const domain = domainOf(input.email);
  const resolve = dnsResolverOf(input.servers);

  const mx = async (): Promise<DnsVital> => {
    try {
      const records = await resolve.resolver.resolveMx(domain);
      const hosts = records.sort((a, b) => a.priority - b.priority).map((r) => `${r.priority} ${r.exchange || '.'}`);
      if (records.length === 1 && (records[0]!.exchange === '' || records[0]!.exchange === '.'))
        return {
          check: 'mx',
          pass: false,
          record: hosts.join(', '),
          message: 'null MX (RFC 7505): the domain receives no mail, replies and bounces are lost',
        };
      return { check: 'mx', pass: true, record: hosts.join(', '), message: `${records.length} mail exchanger(s)` };
    } catch (err) {
      return {
        check: 'mx',
        pass: false,
        record: null,
        message: `no MX record at ${domain} (${codeOf(err) ?? 'lookup failed'})`,
      };
    }
  };

  const spf = async (): Promise<DnsVital> => {
    const txt = await txtRecords(resolve, domain);
    const record = txt.find((t) => /^v=spf1\b/i.test(t)) ?? null;
    if (!input.smtpHost)
      return { check: 'spf', pass: !!record, record, message: record ? 'present' : `no v=spf1 record at ${domain}` };
    const result = await checkSpf(domain, input.email, input.smtpHost, resolve);
    return { check: 'spf', pass: result.ok, record, message: result.message };
  };

  const dkim = async (): Promise<DnsVital> => {
    const selectors = input.dkimSelector ? [input.dkimSelector] : COMMON_DKIM_SELECTORS;
    const results = await Promise.all(selectors.map((s) => checkDkim(domain, s, resolve)));
    const found = results.find((r) => r.ok);
    if (found) {
      const record = (await txtRecords(resolve, found.name))[0] ?? null;
      return { check: 'dkim', pass: true, record, message: `${found.name}: ${found.message}` };
    }
    return {
      check: 'dkim',
      pass: false,
      record: null,
      message: input.dkimSelector ? results[0]!.message : `no DKIM key under the selectors ${selectors.join(', ')}`,
    };
  };

  const dmarc = async (): Promise<DnsVital> => {
    const record = (await txtRecords(resolve, `_dmarc.${domain}`)).find((t) => /^v=DMARC1\b/i.test(t)) ?? null;
    if (!record)
      return { check: 'dmarc', pass: false, record: null, message: `no v=DMARC1 record at _dmarc.${domain}` };
    const policy = record.match(/\bp\s*=\s*(none|quarantine|reject)\b/i)?.[1]?.toLowerCase();
    if (!policy) return { check: 'dmarc', pass: false, record, message: 'the record has no valid p= policy' };
    return {
      check: 'dmarc',
      pass: true,
      record,
      message:
        policy === 'none'
          ? 'policy none: monitoring only (consider quarantine once reports are clean)'
          : `policy ${policy}`,
    };
  };

  const checks = await Promise.all([mx(), spf(), dkim(), dmarc()]);
  return { domain, checks, passed: checks.filter((c) => c.pass).length };
}

async function txtRecords(resolve: DnsResolve, name: string): Promise<string[]> {
  try {
    return (await resolve.resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch {
    return [];
  }
}
