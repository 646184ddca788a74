// A chart over numbered categories (campaign steps, warmup days) rather than time: uPlot on a canvas, the x axis
// labelled with the category's name, points drawn so a single step still shows. lib/ui.js `Chart` plots unix times.
import { html, useEffect, useRef } from './html.js';

const COLORS = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c'];

/**
 * `x` are numbers (1, 2, 3…), `xLabel` names them in the legend, `label(x)` names one on the axis, `ticks` are those labelled (default: every one);
 * `series` are `{ label, values }` (null: no value).
 */
export function CategoryChart({ title, x, xLabel = '', label = String, ticks, series, height = 220 }) {
  const ref = useRef();
  useEffect(() => {
    let plot;
    let live = true;
    import('/console/vendor/uplot.mjs').then(({ default: UPlot }) => {
      if (!live || !ref.current) return;
      const width = Math.max(320, ref.current.clientWidth || 640);
      const top = Math.max(1, ...series.flatMap((s) => s.values.filter((v) => typeof v === 'number')));
      plot = new UPlot(
        {
          width,
          height,
          scales: {
            x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
            y: { range: () => [0, Math.ceil(top * 1.15)] },
          },
          series: [
            { label: xLabel, value: (_u, v) => (v === null ? '—' : label(v)) },
            ...series.map((s, i) => ({
              label: s.label,
              stroke: COLORS[i % COLORS.length],
              width: 2,
              points: { show: true, size: 8, fill: COLORS[i % COLORS.length] },
            })),
          ],
          axes: [
            {
              splits: () => ticks ?? x,
              values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? label(v) : '')),
            },
            { splits: (_u, _i, min, max) => yTicks(min, max) },
          ],
        },
        [x, ...series.map((s) => s.values)],
        ref.current,
      );
    });
    return () => {
      live = false;
      plot?.destroy();
    };
  }, [JSON.stringify({ x, ticks, series })]);
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div ref=${ref} role="img" aria-label=${title}></div>
  </figure>`;
}

/** Whole-number ticks from 0 to `max`, at most about six. */
function yTicks(min, max) {
  const step = Math.max(1, Math.ceil((max - min) / 6));
  const ticks = [];
  for (let v = Math.max(0, Math.ceil(min)); v <= max; v += step) ticks.push(v);
  return ticks;
}
