import { v7 as uuidv7, validate, version } from 'uuid';

/** Time-ordered ids (UUIDv7): keyset pagination on `id` follows creation order. */
export const newId = (): string => uuidv7();

/** True when `value` is a UUID the database can compare without a cast error. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && validate(value) && version(value) <= 8;
