/**
 * What a client's CDP command may not do to the host: choose where Chromium writes downloads (any path the
 * service may write) or give a browser context a proxy of its own (around the SSRF guard). Download paths are
 * pointed into the session's own directory; a context proxy is refused while the guard is on.
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

/** Adjusts `command` in place; answers why it is refused, if it is. */
export function police(command: Command, policy: CommandPolicy): string | undefined {
  const { method, params } = command;
  if ((method === 'Browser.setDownloadBehavior' || method === 'Page.setDownloadBehavior') && params?.downloadPath) {
    params.downloadPath = policy.downloadDir;
  }
  if (method === 'Target.createBrowserContext' && policy.guarded && (params?.proxyServer || params?.proxyBypassList)) {
    return 'A browser context cannot have a proxy of its own on this service';
  }
  return undefined;
}
