/**
 * A SOCKS5 proxy on loopback for the proxy-profile tests: RFC 1928 CONNECT (IPv4, IPv6 and domain addresses)
 * with RFC 1929 user/password authentication, which it requires. It records each CONNECT's target
 * (`host:port`) and whether the credentials passed, so a test can prove traffic went through it.
 */
import net, { type AddressInfo } from 'node:net';

export interface Socks5Proxy {
  /** socks5://user:pass@127.0.0.1:port */
  url: string;
  port: number;
  /** Targets of accepted CONNECTs, in order (`127.0.0.1:8080`). */
  connects: string[];
  /** Authentication attempts that failed. */
  rejectedLogins: number;
  close(): Promise<void>;
}

/** Reads exactly `n` bytes from a socket in paused mode (a small state machine is more than a test needs). */
function reader(socket: net.Socket) {
  let buffered = Buffer.alloc(0);
  let waiting: { n: number; resolve: (b: Buffer) => void } | undefined;
  const pump = () => {
    if (waiting && buffered.length >= waiting.n) {
      const { n, resolve } = waiting;
      waiting = undefined;
      const out = buffered.subarray(0, n);
      buffered = buffered.subarray(n);
      resolve(out);
    }
  };
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    pump();
  };
  socket.on('data', onData);
  return {
    read: (n: number) =>
      new Promise<Buffer>((resolve) => {
        waiting = { n, resolve };
        pump();
      }),
    /** Stops reading; answers the bytes already received past the handshake. */
    detach: () => {
      socket.off('data', onData);
      return buffered;
    },
  };
}

export async function startSocks5Proxy(auth: { username: string; password: string }): Promise<Socks5Proxy> {
  const sockets = new Set<net.Socket>();
  const proxy: Omit<Socks5Proxy, 'url' | 'port' | 'close'> = { connects: [], rejectedLogins: 0 };
  const server = net.createServer(async (client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const { read, detach } = reader(client);
    try {
      const [version, methodCount] = await read(2);
      const methods = await read(methodCount!);
      if (version !== 5 || !methods.includes(0x02)) return void client.end(Buffer.from([5, 0xff]));
      client.write(Buffer.from([5, 0x02]));
      // RFC 1929: VER(1) ULEN UNAME PLEN PASSWD
      const [, ulen] = await read(2);
      const username = (await read(ulen!)).toString();
      const [plen] = await read(1);
      const password = (await read(plen!)).toString();
      if (username !== auth.username || password !== auth.password) {
        proxy.rejectedLogins++;
        return void client.end(Buffer.from([1, 1]));
      }
      client.write(Buffer.from([1, 0]));
      const [, command, , atyp] = await read(4);
      let host: string;
      if (atyp === 1) host = [...(await read(4))].join('.');
      else if (atyp === 4) host = ((await read(16)).toString('hex').match(/.{4}/g) ?? []).join(':');
      else host = (await read((await read(1))[0]!)).toString();
      const port = (await read(2)).readUInt16BE(0);
      if (command !== 1) return void client.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
      const remote = net.connect({ host, port });
      sockets.add(remote);
      remote.on('close', () => sockets.delete(remote));
      remote.once('error', () => client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0])));
      remote.once('connect', () => {
        proxy.connects.push(`${host}:${port}`);
        client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
        const rest = detach();
        if (rest.length) remote.write(rest);
        client.pipe(remote);
        remote.pipe(client);
        remote.on('error', () => client.destroy());
        client.on('close', () => remote.destroy());
        remote.on('close', () => client.destroy());
      });
    } catch {
      client.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(proxy, {
    port,
    url: `socks5://${encodeURIComponent(auth.username)}:${encodeURIComponent(auth.password)}@127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  }) as Socks5Proxy;
}
