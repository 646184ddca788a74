import type { FastifyInstance } from 'fastify';
import { validationError } from './errors.ts';

/** Arrays and objects a JSON body may nest: far beyond any request of the API, far below what recursion survives. */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether JSON text nests arrays/objects deeper than `max`, by one scan of the raw text (brackets
 * inside strings do not count). Malformed text is left to the parser.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: the next quote not escaped by a backslash ends it.
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * The JSON body parser of every route: Fastify's own (secure-json-parse, proto and constructor
 * poisoning refused), after a depth check. A body nested beyond MAX_JSON_DEPTH is a 400 before it is
 * parsed: deeper values overflow the stack of recursive code downstream (JSON.stringify, validators).
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonNestsDeeperThan(body as string, MAX_JSON_DEPTH)) {
      return done(validationError('body', `JSON nested more than ${MAX_JSON_DEPTH} levels deep`), undefined);
    }
    parseJson(request, body as string, done);
  });
}
