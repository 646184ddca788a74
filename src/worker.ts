import module from 'node:module';

// Compiled code is cached between starts (README "Start-up"); the runtime is imported after, so it is cached too.
module.enableCompileCache?.();
const { main } = await import('./runtime.ts');
// Workers only (no HTTP): run as many of these as needed against the same DATABASE_URL.
await main({ http: false, workers: true });
