/** Text for an HTML element or a quoted attribute. */
export const escapeHtml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** PostgreSQL text holds no NUL character; text from outside (a mail, a webhook) may carry one. */
export const withoutNul = (text: string): string => text.replaceAll('\u0000', '');
