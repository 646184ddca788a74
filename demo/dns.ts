/**
 * The demo's DNS server (UDP on loopback): answers for the demo's made-up domains only, so Quarry started with
 * `DNS_SERVERS=127.0.0.1:<port>` finds mail exchangers for the demo leads (their emails validate) and the sending
 * domain's MX, SPF, DKIM and DMARC (`POST /api/outreach/accounts/{id}/test` passes). A name outside the demo
 * domains is answered REFUSED: this server knows nothing else, and a real domain checked through it by mistake
 * then comes out `unknown`, not `domain_not_found`.
 */
import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';

const { Packet } = dns2;
// RFC 1035 §4.1.1 response codes (dns2 has them as Packet.RCODE, missing from its type definitions).
const RCODE = { NXDOMAIN: 3, REFUSED: 5 } as const;

interface Records {
  mx?: string;
  a?: string;
  txt?: string;
}

export interface DemoDnsOptions {
  /** The leads' domains: each gets an MX pointing at the demo mail host. */
  leadDomains: string[];
  /** The sending mailbox's domain: MX, SPF, DKIM (selector `default`) and DMARC. */
  sendingDomain: string;
  /** The demo mail host's name (an A record to 127.0.0.1). */
  mailHost: string;
}

/** The zone: every name the demo answers for, with its records. */
export function demoZone(options: DemoDnsOptions): Map<string, Records> {
  // A fresh key each start: the DKIM check reads a well-formed key; the demo does not sign mail with it.
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const zone = new Map<string, Records>();
  for (const domain of options.leadDomains) zone.set(domain, { mx: options.mailHost });
  const send = options.sendingDomain;
  zone.set(send, { mx: options.mailHost, txt: 'v=spf1 ip4:127.0.0.1 -all' });
  zone.set(options.mailHost, { a: '127.0.0.1' });
  zone.set(`default._domainkey.${send}`, { txt: `v=DKIM1; k=rsa; p=${p}` });
  zone.set(`_dmarc.${send}`, { txt: 'v=DMARC1; p=none' });
  return zone;
}

/** The demo DNS server, listening on `host:port` (UDP); `close` stops it. */
export async function startDemoDns(
  options: DemoDnsOptions & { host: string; port: number },
): Promise<{ port: number; close(): Promise<void> }> {
  const zone = demoZone(options);
  const apexes = [...options.leadDomains, options.sendingDomain];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (!question) return send(response);
      const name = question.name.toLowerCase().replace(/\.$/, '');
      const records = zone.get(name);
      if (!records) {
        const ours = apexes.some((apex) => name === apex || name.endsWith(`.${apex}`));
        response.header.rcode = ours ? RCODE.NXDOMAIN : RCODE.REFUSED;
        return send(response);
      }
      const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
      if (question.type === Packet.TYPE.MX && records.mx)
        response.answers.push({ ...base, type: Packet.TYPE.MX, exchange: records.mx, priority: 10 } as never);
      if (question.type === Packet.TYPE.A && records.a)
        response.answers.push({ ...base, type: Packet.TYPE.A, address: records.a } as never);
      if (question.type === Packet.TYPE.TXT && records.txt)
        response.answers.push({
          ...base,
          type: Packet.TYPE.TXT,
          // RFC 1035 §3.3.14: character-strings of 255 octets at most.
          data: records.txt.match(/[\s\S]{1,255}/g) ?? [''],
        } as never);
      // No record of the asked type: NOERROR with an empty answer (NODATA).
      send(response);
    },
  });
  // dns2 reports a port that cannot be bound as an 'error' event, never rejecting `listen`: without this the
  // whole demo would crash on a taken DEMO_DNS_PORT instead of reporting it.
  const listening = await new Promise<unknown>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ udp: { port: options.port, address: options.host } }).then(resolve, reject);
  });
  server.removeAllListeners('error');
  server.on('error', (err: Error) => console.error(`demo DNS: ${err.message}`));
  const port = (listening as unknown as { udp: AddressInfo }).udp.port;
  return { port, close: () => server.close() };
}
