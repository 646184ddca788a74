import { main } from './runtime.ts';

await main({ http: true, workers: true });
