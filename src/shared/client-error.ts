import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** Sockets already answered: the HTTP parser reports its error again as more of the same request arrives. */
const answered = new WeakSet<Duplex>();
/** How long a refused connection may keep sending before it is cut. */
const LINGER_MS = 2000;

function answerFor(code: string | undefined): [status: number, code: string, message: string] {
  if (code === 'HPE_HEADER_OVERFLOW')
    return [431, 'HEADERS_TOO_LARGE', 'The request line and headers exceed the size limit'];
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'REQUEST_TIMEOUT', 'The request did not arrive in time'];
  return [400, 'VALIDATION_ERROR', 'Malformed HTTP request'];
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses (header overflow, timeout,
 * malformed) gets the error envelope with `Connection: close`, so a keep-alive client opens a new
 * connection instead of reusing one that is about to close. The socket is closed gracefully (FIN
 * after the answer, what the client still sends is read and dropped) so the answer is not lost to a
 * reset; a client that keeps sending is cut after LINGER_MS.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (answered.has(socket)) return;
  answered.add(socket);
  if (error.code === 'ECONNRESET' || socket.destroyed) return void socket.destroy();
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const [status, code, message] = answerFor(error.code);
    const body = JSON.stringify({ success: false, error: { code, message } });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  } else {
    socket.end();
  }
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy());
  socket.on('data', () => {});
}
