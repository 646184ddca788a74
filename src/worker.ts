import module from 'node:module';
import { installResolutionFastPath } from './module-resolution.ts';

// Compiled code is cached between starts, and resolution takes a fast path (docs/scaling-out.md "Start-up"); both are set up
// before the runtime is imported, so they apply to it.
module.enableCompileCache?.();
installResolutionFastPath();
const { main } = await import('./runtime.ts');
// Workers only (no HTTP): run as many of these as needed against the same DATABASE_URL.
await main({ http: false, workers: true });
