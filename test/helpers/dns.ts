import dns2 from 'dns2';

const { Packet } = dns2;
// RFC 1035 §4.1.1 response codes (dns2 has them as Packet.RCODE, missing from its type definitions).
const RCODE = { SERVFAIL: 2, NXDOMAIN: 3 } as const;

/** One name's records; `behaviour` makes the server fail for it instead. */
export interface Zone {
  mx?: Array<{ exchange: string; priority: number }>;
  a?: string[];
  /**
   * Later A answers, in turn: the first A query of the name gets `a`, the next ones these (the last repeats).
   * A name that changes its answer between queries, as a DNS-rebinding host with TTL 0 does.
   */
  aThen?: string[][];
  aaaa?: string[];
  /** TXT records, one string each (split into 255-octet character-strings as RFC 1035 §3.3.14 requires). */
  txt?: string[];
  /** `hang`: never answers (the resolver times out); `servfail`: answers SERVFAIL. */
  behaviour?: 'hang' | 'servfail';
}

/** Names served by default (anything else is NXDOMAIN). */
export const TEST_ZONES: Record<string, Zone> = {
  // A domain with mail exchangers.
  'acme.test': {
    mx: [
      { exchange: 'mx1.acme.test', priority: 10 },
      { exchange: 'mx2.acme.test', priority: 20 },
    ],
    a: ['192.0.2.10'],
  },
  // RFC 7505 null MX: "this domain accepts no mail".
  'nullmx.test': { mx: [{ exchange: '', priority: 0 }], a: ['192.0.2.20'] },
  // No MX but an address: the implicit MX of RFC 5321 §5.1.
  'a-only.test': { a: ['192.0.2.30'] },
  'aaaa-only.test': { aaaa: ['2001:db8::1'] },
  // Exists (NOERROR) but has neither MX nor A/AAAA.
  'nomail.test': {},
  'hang.test': { behaviour: 'hang' },
  'servfail.test': { behaviour: 'servfail' },
  // Real-world names the flag lists know, served locally so no test leaves the machine.
  'gmail.com': { mx: [{ exchange: 'gmail-smtp-in.l.google.com', priority: 5 }] },
  'mailinator.com': { mx: [{ exchange: 'mail.mailinator.com', priority: 10 }] },
  'gmial.com': { mx: [{ exchange: 'mx.gmial.com', priority: 10 }] },
  'outlok.com': { a: ['192.0.2.40'] },
};

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as DNS_SERVERS takes it. */
  address: string;
  port: number;
  /** Queries received per lower-cased name. */
  queries: Map<string, number>;
  close(): Promise<void>;
}

/** A real DNS server over UDP on loopback, serving `zones`. */
export async function startTestDnsServer(zones: Record<string, Zone> = TEST_ZONES): Promise<TestDnsServer> {
  const queries = new Map<string, number>();
  const aQueries = new Map<string, number>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (!question) return send(response);
      const name = question.name.toLowerCase();
      queries.set(name, (queries.get(name) ?? 0) + 1);
      const zone = zones[name];
      if (!zone) {
        response.header.rcode = RCODE.NXDOMAIN;
        return send(response);
      }
      if (zone.behaviour === 'hang') return;
      if (zone.behaviour === 'servfail') {
        response.header.rcode = RCODE.SERVFAIL;
        return send(response);
      }
      // A name whose answer changes is served with TTL 0, so no resolver cache hides the change.
      const base = { name: question.name, class: Packet.CLASS.IN, ttl: zone.aThen ? 0 : 60 };
      if (question.type === Packet.TYPE.MX) {
        for (const mx of zone.mx ?? [])
          response.answers.push({
            ...base,
            type: Packet.TYPE.MX,
            exchange: mx.exchange,
            priority: mx.priority,
          } as never);
      } else if (question.type === Packet.TYPE.A) {
        const n = aQueries.get(name) ?? 0;
        aQueries.set(name, n + 1);
        const later = zone.aThen ?? [];
        const answer = n === 0 || !later.length ? zone.a : later[Math.min(n - 1, later.length - 1)];
        for (const address of answer ?? []) response.answers.push({ ...base, type: Packet.TYPE.A, address } as never);
      } else if (question.type === Packet.TYPE.TXT) {
        for (const text of zone.txt ?? [])
          response.answers.push({
            ...base,
            type: Packet.TYPE.TXT,
            data: text.match(/[\s\S]{1,255}/g) ?? [''],
          } as never);
      } else if (question.type === Packet.TYPE.AAAA) {
        for (const address of zone.aaaa ?? [])
          response.answers.push({ ...base, type: Packet.TYPE.AAAA, address } as never);
      }
      // No record of the asked type: NOERROR with an empty answer (NODATA).
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (addresses as { udp: { port: number } }).udp.port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    queries,
    close: () => server.close(),
  };
}
