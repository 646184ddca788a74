/**
 * A destination's settings with its secrets opened, and the target or the connection check built from them.
 * Secrets are sealed under SECRET_KEY (src/shared/crypto.ts) and opened only here, in the process that pushes.
 */
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { checkPostgres, postgresTarget } from './destinations.postgres.ts';
import type { DestinationRow } from './destinations.repository.ts';
import { checkS3, s3Target } from './destinations.s3.ts';
import type { PostgresConfig, S3Config, WebhookConfig } from './destinations.schemas.ts';
import type { OpenedDestination, PushContext, Target } from './destinations.target.ts';
import { webhookSender, webhookTarget } from './destinations.webhook.ts';

type Config = AppDeps['config'];

export function destinationSecrets(config: Config) {
  const box = createSecretBox(secretKeyMaterial(config));
  return {
    seal: (secrets: Record<string, string>): string | null =>
      Object.keys(secrets).length ? box.seal(JSON.stringify(secrets)) : null,
    open: (row: Pick<DestinationRow, 'id' | 'type' | 'config' | 'secrets'>): OpenedDestination => ({
      id: row.id,
      type: row.type,
      config: { ...row.config, ...(row.secrets ? (JSON.parse(box.open(row.secrets)) as Record<string, string>) : {}) },
    }),
  };
}

export function targetOf(destination: OpenedDestination, config: Config, context: PushContext): Target {
  const allow = config.ALLOW_PRIVATE_NETWORK;
  switch (destination.type) {
    case 'webhook':
      return webhookTarget(destination.config as WebhookConfig & { secret: string }, config, context);
    case 'postgres':
      return postgresTarget(destination.config as PostgresConfig, allow, context);
    case 's3':
      return s3Target(destination.config as S3Config, allow, context);
  }
}

/** The check on create (unless `skipTest`): throws TargetError naming what failed. */
export async function checkDestination(destination: OpenedDestination, config: Config): Promise<void> {
  const allow = config.ALLOW_PRIVATE_NETWORK;
  switch (destination.type) {
    case 'webhook': {
      const send = webhookSender(destination.config as WebhookConfig & { secret: string }, config);
      return send(`${destination.id}_test`, 'destination.test', { destinationId: destination.id });
    }
    case 'postgres':
      return checkPostgres(destination.config as PostgresConfig, allow);
    case 's3':
      return checkS3(destination.config as S3Config, allow);
  }
}
