/**
 * The markdown exports module's face (docs/CONVENTIONS.md "A module's face"): what the app and the workers use.
 */
export { markdownExportRoutes } from './markdown-exports.routes.ts';
export { createMarkdownExportRecovery, createMarkdownExportRunner } from './markdown-exports.runner.ts';
export { createMarkdownExportService, type MarkdownExportMessage } from './markdown-exports.service.ts';
