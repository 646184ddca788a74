// The console's view layer: Preact with htm tagged templates (no build step), and Preact's hooks.
import htm from '/console/vendor/htm.mjs';
import { Fragment, h, render } from '/console/vendor/preact.mjs';

export const html = htm.bind(h);
export { useCallback, useEffect, useMemo, useRef, useState } from '/console/vendor/hooks.mjs';
export { Fragment, h, render };
