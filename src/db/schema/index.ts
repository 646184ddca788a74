export * from './users.ts';
export * from './gdpr.ts';
export * from './projects.ts';
export * from './sources.ts';
export * from './leads.ts';
export * from './profiles.ts';
export * from './idempotency.ts';
export * from './ai.ts';
