import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { contentDisposition } from '../files/files.service.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import { browserTags, readScope, sessionParams, sessionPath, writeScope } from '../tabs/route-parts.ts';
import { LEASE_TTL_MS } from './profile-leases.ts';
import { createProfileBody, listProfilesQuery, profileView, saveProfileBody } from './profiles.schemas.ts';
import { createProfiles, EXPORT_FORMAT } from './profiles.service.ts';

const tenancy =
  'With `X-Client-Ref`, only profiles recorded with that ref exist (others answer 404); without it, every profile ' +
  'of the key.';
const oneWriter =
  'A profile has one writer at a time: a session created with `profileId` and `persistProfile: true` holds its ' +
  `writer lease (renewed while it lives, freed at its end, free again ${LEASE_TTL_MS / 1000} s after its host ` +
  'stopped renewing it); another such session, or a save into it from another session, is 409 PROFILE_LOCKED. ' +
  'Sessions created with `profileId` alone start from a copy of its state and never write it back.';
const one = envelope(z.object({ profile: profileView }));

/** `/api/browser/profiles…` and `POST /api/browser/sessions/{id}/save-profile`: persistent browser state. */
export const browserProfileRoutes: RouteModule = (app, deps) => {
  const profiles = createProfiles(deps);
  const sessions = browserSessionsOf(deps);

  app.post('/api/browser/profiles', {
    config: writeScope,
    schema: {
      tags: browserTags,
      summary: 'Create a browser profile (empty until a session saves into it)',
      description:
        'A profile keeps browser state between sessions: cookies, and per origin its localStorage and IndexedDB. ' +
        `Start a session with \`profileId\` to begin where it was saved. ${oneWriter} \`clientRef\` defaults to ` +
        `X-Client-Ref. ${tenancy}`,
      body: createProfileBody,
      response: { 201: one, ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ profile: await profiles.create(request, request.body) });
    },
  });

  app.get('/api/browser/profiles', {
    config: readScope,
    schema: {
      tags: browserTags,
      summary: 'List browser profiles, newest first',
      description: `Cursor pagination. ${tenancy}`,
      querystring: listProfilesQuery,
      response: {
        200: envelope(z.object({ profiles: z.array(profileView), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await profiles.list(request, request.query)),
  });

  app.get('/api/browser/profiles/:id', {
    config: readScope,
    schema: {
      tags: browserTags,
      summary: 'A browser profile: its size, last save and writer',
      description: tenancy,
      params: idParams,
      response: { 200: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) => ok({ profile: await profiles.get(request, request.params.id) }),
  });

  app.delete('/api/browser/profiles/:id', {
    config: writeScope,
    schema: {
      tags: browserTags,
      summary: 'Delete a browser profile and its stored state',
      description:
        'While a writer (a live `persistProfile` session) holds it: 409 PROFILE_LOCKED; release that session first. ' +
        `Sessions that started from a copy keep running. ${tenancy}`,
      params: idParams,
      response: { 200: successOnly, ...errorResponses(400, 401, 403, 404, 409) },
    },
    handler: async (request) => {
      await profiles.remove(request, request.params.id);
      return done('Profile deleted');
    },
  });

  app.get('/api/browser/profiles/:id/export', {
    config: readScope,
    schema: {
      tags: browserTags,
      summary: "A browser profile's state as a portable ZIP archive",
      description:
        `A ZIP with two JSON files. \`profile.json\`: \`{format: "${EXPORT_FORMAT}", exportedAt, profile}\` (the ` +
        "profile as GET answers it). `storage-state.json`: the state in Playwright's storage-state format, usable " +
        'as is with `browser.newContext({ storageState })`: `{cookies: [{name, value, domain, path, expires ' +
        '(Unix seconds, -1 for a session cookie), httpOnly, secure, sameSite}], origins: [{origin, localStorage: ' +
        '[{name, value}], indexedDB}]}`; `{cookies: [], origins: []}` for a profile never saved. sessionStorage ' +
        `(per tab) and the HTTP cache are not part of a profile. ${tenancy}`,
      params: idParams,
      response: { 200: z.any().describe('application/zip'), ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request, reply) => {
      const { name, zip } = await profiles.exportZip(request, request.params.id);
      return reply
        .type('application/zip')
        .headers({ 'content-disposition': contentDisposition(name), 'cache-control': 'no-store' })
        .send(Buffer.from(zip.buffer, zip.byteOffset, zip.byteLength));
    },
  });

  app.post(sessionPath('save-profile'), {
    config: writeScope,
    schema: {
      tags: browserTags,
      summary: "Save a live session's browser state into a profile",
      description:
        'Saves the cookies and, per origin, the localStorage and IndexedDB of the origins open in its tabs and of ' +
        'those visited since the service first drove it, replacing the profile’s state. Into which profile: a ' +
        '`persistProfile` ' +
        'session saves into its own (with its writer lease; a lease taken over since — its host stopped renewing ' +
        'it — makes the save 409 PROFILE_LOCKED and stores nothing). Any other session saves into `profileId`, into ' +
        'a new profile named `name` (recorded with the session’s clientRef), or, with neither, into the profile it ' +
        'started from; that one save takes the writer lease (409 PROFILE_LOCKED while a writer holds it). A session ' +
        'without a profile and neither field: 400 naming `profileId`. State over BROWSER_PROFILE_MAX_MB: 413 ' +
        `PAYLOAD_TOO_LARGE, nothing stored. ${oneWriter}`,
      params: sessionParams,
      body: saveProfileBody,
      response: { 200: one, ...errorResponses(400, 401, 403, 404, 409, 413, 503) },
    },
    handler: async (request) =>
      ok({ profile: await profiles.saveFromSession(request, sessions, request.params.id, request.body) }),
  });
};
