/** The proxy-profiles module's face (docs/CONVENTIONS.md "A module's face"). */

export { proxyProfileRoutes } from './proxy-profiles.routes.ts';
export { createProxyProfileService, ownsProxyProfile, type ProxyProfileService } from './proxy-profiles.service.ts';
