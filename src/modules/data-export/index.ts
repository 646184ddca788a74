/**
 * The data-export module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { dataExportRoutes } from './data-export.routes.ts';
export { createDataExportService, type DataExportJob } from './data-export.service.ts';
