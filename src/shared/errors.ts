/** One error type for the whole service; the code decides the HTTP status (Documenso-style). */
export const errorStatus = {
  VALIDATION_ERROR: 400,
  INVALID_PASSWORD: 400,
  INVALID_TOKEN: 400,
  NO_PENDING_DELETION: 400,
  ALREADY_ACTIVE: 400,
  INVALID_STATUS: 400,
  NO_EMAIL: 400,
  SOURCE_NOT_ACTIVE: 400,
  NO_RULES: 400,
  INVALID_SIGNATURE: 400,
  INVALID_STATE: 400,
  DNS_NOT_READY: 400,
  CONNECTION_FAILED: 400,
  CLIENT_REF_MISMATCH: 400,
  UNAUTHORIZED: 401,
  INSUFFICIENT_CREDITS: 402,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  INSUFFICIENT_SCOPE: 403,
  ACCOUNT_SUSPENDED: 403,
  TEMPLATE_READ_ONLY: 403,
  NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  APPROVAL_PENDING: 409,
  PROFILE_LOCKED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  SUPPRESSED: 422,
  ACTION_FAILED: 422,
  RATE_LIMIT_EXCEEDED: 429,
  CAPACITY_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  AI_NOT_CONFIGURED: 503,
  AI_PROVIDER_ERROR: 502,
  SEARCH_NOT_CONFIGURED: 503,
  SEARCH_PROVIDER_ERROR: 502,
  PAYMENTS_NOT_CONFIGURED: 503,
  PAYMENT_PROVIDER_ERROR: 502,
  PLATFORM_ERROR: 502,
  LAST_OWNER: 409,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export interface ErrorDetail {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = options.details;
    this.headers = options.headers;
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

export const notFound = (what: string, field?: string) =>
  new AppError('NOT_FOUND', `${what} not found`, field ? { details: [{ field, message: `${what} not found` }] } : {});

export const validationError = (field: string, message: string) =>
  new AppError('VALIDATION_ERROR', `${field}: ${message}`, { details: [{ field, message }] });

/** A suspended user's key or login (docs/operations.md "Admin"). */
/** A 400 naming every field in `details` at once (all problems of a body, not the first). */
export const validationErrors = (details: ErrorDetail[]) =>
  new AppError('VALIDATION_ERROR', details.map((d) => `${d.field}: ${d.message}`).join('; '), { details });

export const accountSuspended = () =>
  new AppError('ACCOUNT_SUSPENDED', 'This account is suspended; contact the operator of this service');
