/**
 * The jobs module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { createJobRecovery } from './jobs.recovery.ts';
export { jobRoutes } from './jobs.routes.ts';
export { createJobRunner } from './jobs.runner.ts';
export { dispatchDueSources } from './jobs.scheduler.ts';
export { createJobBody, listJobsQuery } from './jobs.schemas.ts';
export { createJobService, JOB_UPDATE_CHANNEL, type JobMessage } from './jobs.service.ts';
