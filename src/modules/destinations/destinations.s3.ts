/**
 * S3 destinations (`@aws-sdk/client-s3`): each batch is one object, `<prefix>/<pushId>/part-00001.<format>`, so a
 * push resumed after a crash overwrites the part it repeats instead of adding one. Connections resolve through the
 * SSRF guard's lookup (a private endpoint is refused unless ALLOW_PRIVATE_NETWORK).
 */
import http from 'node:http';
import https from 'node:https';
import { HeadBucketCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { csvRow } from '../../shared/csv.ts';
import { assertPublicHost, guardedLookup, ssrfCause } from '../../shared/ssrf.ts';
import type { S3Config } from './destinations.schemas.ts';
import { LEAD_COLUMNS, type PushContext, type PushLead, type Target, TargetError } from './destinations.target.ts';

export const s3Key = (config: Pick<S3Config, 'prefix' | 'format'>, pushId: string, part: number): string => {
  const prefix = (config.prefix ?? '').replace(/^\/+|\/+$/g, '');
  return `${prefix ? `${prefix}/` : ''}${pushId}/part-${String(part).padStart(5, '0')}.${config.format}`;
};

const HEADER = csvRow(LEAD_COLUMNS.map(([column]) => column));

/** The object's body: CSV with a header line (tags joined by `;`), or one JSON lead per line. */
export function s3Body(format: S3Config['format'], leads: PushLead[]): string {
  if (format === 'jsonl') return leads.map((l) => JSON.stringify(l)).join('\n') + (leads.length ? '\n' : '');
  let out = HEADER;
  for (const lead of leads)
    out += csvRow(LEAD_COLUMNS.map(([, field]) => (field === 'tags' ? lead.tags.join(';') : lead[field])));
  return out;
}

function clientOf(config: S3Config, allowPrivateNetwork: boolean): S3Client {
  const lookup = guardedLookup(allowPrivateNetwork) as never;
  return new S3Client({
    region: config.region,
    endpoint: config.endpoint,
    forcePathStyle: config.forcePathStyle,
    credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
    // S3-compatible services (MinIO, R2, …) do not all take the newer default checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: {
      httpAgent: new http.Agent({ keepAlive: true, lookup }),
      httpsAgent: new https.Agent({ keepAlive: true, lookup }),
      connectionTimeout: 10_000,
      requestTimeout: 60_000,
    },
  });
}

/** A short reason for a failed S3 call, safe to show (never the credentials). */
function reasonOf(error: unknown): string {
  const blocked = ssrfCause(error);
  if (blocked) return blocked.message;
  if (error instanceof S3ServiceException)
    return `${error.name} (HTTP ${error.$metadata.httpStatusCode ?? '?'})${error.message ? `: ${error.message}` : ''}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * The endpoint's host is checked before the first call: the guarded lookup covers names (at every connection), but
 * an IP literal is connected to without a lookup.
 */
async function checkEndpoint(config: S3Config, allowPrivateNetwork: boolean): Promise<void> {
  if (!config.endpoint) return;
  await s3Call(config.bucket, () => assertPublicHost(new URL(config.endpoint!).hostname, allowPrivateNetwork));
}

async function s3Call<T>(bucket: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new TargetError(`S3 bucket ${bucket}: ${reasonOf(error)}`);
  }
}

/** The check on create: the bucket exists and the key may read it (HeadBucket). */
export async function checkS3(config: S3Config, allowPrivateNetwork: boolean): Promise<void> {
  const client = clientOf(config, allowPrivateNetwork);
  try {
    await checkEndpoint(config, allowPrivateNetwork);
    await s3Call(config.bucket, () => client.send(new HeadBucketCommand({ Bucket: config.bucket })));
  } finally {
    client.destroy();
  }
}

export function s3Target(config: S3Config, allowPrivateNetwork: boolean, context: PushContext): Target<string> {
  const client = clientOf(config, allowPrivateNetwork);
  return {
    batchSize: 10_000,
    open: () => checkEndpoint(config, allowPrivateNetwork),
    encode: (leads) => s3Body(config.format, leads),
    async write(body, part) {
      await s3Call(config.bucket, () =>
        client.send(
          new PutObjectCommand({
            Bucket: config.bucket,
            Key: s3Key(config, context.pushId, part),
            Body: body,
            ContentType: config.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
          }),
        ),
      );
    },
    close: async () => client.destroy(),
  };
}
