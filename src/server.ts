import module from 'node:module';

// Compiled code is cached between starts (README "Start-up"); the runtime is imported after, so it is cached too.
module.enableCompileCache?.();
const { main } = await import('./runtime.ts');
await main({ http: true, workers: true });
