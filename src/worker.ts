import { main } from './runtime.ts';

// Workers only (no HTTP): run as many of these as needed against the same DATABASE_URL.
await main({ http: false, workers: true });
