import path from 'node:path';

/**
 * What a client's CDP command may not do to the host: open a page from the host's files (`file:`, `chrome:`,
 * `view-source:`… a browser-started navigation may load them, and the page could then read them), hand the host's
 * files to a page (`DOM.setFileInputFiles` outside the session's own directory), give pages the protocol itself
 * (`Target.exposeDevToolsProtocol`), choose where Chromium writes downloads (any path the service may write) or
 * give a browser context a proxy of its own (around the SSRF guard). Download paths are pointed into the session's
 * own directory; the rest is refused.
 */
export interface CommandPolicy {
  /** Where this session's downloads go. */
  downloadDir: string;
  /** The session's traffic goes through the SSRF guard (ALLOW_PRIVATE_NETWORK off). */
  guarded: boolean;
}

interface Command {
  method?: string;
  params?: Record<string, unknown>;
}

/** Schemes a client may open a page or load a resource from: the web, and pages that carry their own content. */
const OPEN_SCHEMES = new Set(['http:', 'https:', 'about:', 'data:']);
/** Commands whose `url` the browser itself loads (not subject to a page's own origin rules). */
const URL_COMMANDS = new Set(['Page.navigate', 'Target.createTarget', 'Network.loadNetworkResource']);

function schemeOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).protocol;
  } catch {
    return undefined;
  }
}

/** Adjusts `command` in place; answers why it is refused, if it is. */
export function police(command: Command, policy: CommandPolicy): string | undefined {
  const { method, params } = command;
  if (method && URL_COMMANDS.has(method) && params?.url !== undefined && params.url !== '') {
    const scheme = schemeOf(params.url);
    if (!scheme || !OPEN_SCHEMES.has(scheme)) return `${method} may open http(s), about: and data: URLs only`;
  }
  if (method === 'DOM.setFileInputFiles') {
    const files = Array.isArray(params?.files) ? params.files : [];
    const inside = (file: unknown) =>
      typeof file === 'string' && path.resolve(policy.downloadDir, file).startsWith(`${policy.downloadDir}${path.sep}`);
    if (!files.every(inside)) return "DOM.setFileInputFiles takes files from the session's own directory only";
  }
  if (method === 'Target.exposeDevToolsProtocol') return 'Pages cannot be given the DevTools protocol';
  const downloads = method === 'Browser.setDownloadBehavior' || method === 'Page.setDownloadBehavior';
  if (downloads && (params?.behavior === 'allow' || params?.behavior === 'allowAndName' || params?.downloadPath)) {
    params!.downloadPath = policy.downloadDir;
  }
  if (method === 'Target.createBrowserContext' && policy.guarded && (params?.proxyServer || params?.proxyBypassList)) {
    return 'A browser context cannot have a proxy of its own on this service';
  }
  return undefined;
}
