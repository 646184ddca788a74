/**
 * An S3-compatible server on loopback for the destination tests: the part of the S3 REST API the SDK's PutObject,
 * GetObject and HeadBucket use, path-style (`/<bucket>/<key>`). Every request must carry a SigV4 signature made
 * with the configured key: the server signs the request again with `@smithy/signature-v4` (the SDK's own signer)
 * and compares, and checks the payload hash, so a wrong secret or an altered body is refused as S3 refuses it.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';

export interface S3Object {
  body: Buffer;
  contentType: string | undefined;
}

export interface S3Server {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** bucket → key → object */
  buckets: Map<string, Map<string, S3Object>>;
  /** Every PUT received, in order (a repeated key appears twice). */
  puts: string[];
  close(): Promise<void>;
}

/** The hash the signer asks for, on node:crypto. */
class Sha256 {
  private readonly secret: Buffer | undefined;
  private hash: crypto.Hash | crypto.Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.secret =
      secret === undefined
        ? undefined
        : typeof secret === 'string'
          ? Buffer.from(secret)
          : ArrayBuffer.isView(secret)
            ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength)
            : Buffer.from(secret);
    this.hash = this.make();
  }
  private make() {
    return this.secret ? crypto.createHmac('sha256', this.secret) : crypto.createHash('sha256');
  }
  update(data: string | Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.make();
  }
}

const xmlError = (res: http.ServerResponse, status: number, code: string, message: string) => {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
};

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/;

/** The signature the request should carry, or a reason it cannot have one. */
async function expectedSignature(
  req: http.IncomingMessage,
  body: Buffer,
  key: { accessKeyId: string; secretAccessKey: string; region: string },
): Promise<{ ok: true } | { ok: false; code: string; message: string }> {
  const match = AUTH.exec(String(req.headers.authorization ?? ''));
  if (!match) return { ok: false, code: 'AccessDenied', message: 'missing or malformed Authorization' };
  const [, accessKeyId, , region, signedHeaders, signature] = match;
  if (accessKeyId !== key.accessKeyId) return { ok: false, code: 'InvalidAccessKeyId', message: 'unknown key' };
  const payloadHash = String(req.headers['x-amz-content-sha256'] ?? '');
  if (payloadHash !== 'UNSIGNED-PAYLOAD' && payloadHash !== crypto.createHash('sha256').update(body).digest('hex'))
    return { ok: false, code: 'XAmzContentSHA256Mismatch', message: 'payload hash mismatch' };
  const url = new URL(req.url ?? '/', 'http://s3.local');
  const headers: Record<string, string> = {};
  for (const name of signedHeaders!.split(';')) headers[name] = String(req.headers[name] ?? '');
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:` +
      `${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({
    service: 's3',
    region: region!,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: req.method ?? 'GET',
      protocol: 'http:',
      hostname: (headers.host ?? '').replace(/:\d+$/, ''),
      port: Number((headers.host ?? '').split(':')[1]) || undefined,
      path: url.pathname,
      query,
      headers,
      body,
    },
    { signingDate },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))?.[1];
  return expected === signature
    ? { ok: true }
    : { ok: false, code: 'SignatureDoesNotMatch', message: 'The request signature does not match' };
}

export async function startS3Server(
  options: { accessKeyId?: string; secretAccessKey?: string; region?: string; buckets?: string[] } = {},
): Promise<S3Server> {
  const key = {
    accessKeyId: options.accessKeyId ?? 'AKIAQUARRYTEST',
    secretAccessKey: options.secretAccessKey ?? crypto.randomBytes(20).toString('base64url'),
    region: options.region ?? 'us-east-1',
  };
  const buckets = new Map((options.buckets ?? ['leads']).map((b) => [b, new Map<string, S3Object>()]));
  const puts: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const auth = await expectedSignature(req, body, key).catch((e: Error) => ({
        ok: false as const,
        code: 'AccessDenied',
        message: e.message,
      }));
      if (!auth.ok) return xmlError(res, 403, auth.code, auth.message);
      const path = new URL(req.url ?? '/', 'http://s3.local').pathname;
      const [, bucketName = '', ...rest] = path.split('/');
      const objectKey = decodeURIComponent(rest.join('/'));
      const bucket = buckets.get(bucketName);
      if (!bucket) return xmlError(res, 404, 'NoSuchBucket', 'The specified bucket does not exist');
      if (req.method === 'HEAD' && !objectKey) return res.writeHead(200).end();
      if (req.method === 'PUT' && objectKey) {
        bucket.set(objectKey, { body, contentType: req.headers['content-type'] });
        puts.push(`${bucketName}/${objectKey}`);
        const etag = crypto.createHash('md5').update(body).digest('hex');
        return res.writeHead(200, { etag: `"${etag}"` }).end();
      }
      if (req.method === 'GET' && objectKey) {
        const object = bucket.get(objectKey);
        if (!object) return xmlError(res, 404, 'NoSuchKey', 'The specified key does not exist.');
        return res
          .writeHead(200, { 'content-type': object.contentType ?? 'application/octet-stream' })
          .end(object.body);
      }
      xmlError(res, 501, 'NotImplemented', `${req.method} is not implemented here`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    ...key,
    buckets,
    puts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
