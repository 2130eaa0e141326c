import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Bar {
  label: string;
  value: number;
  /** Drawn in the highlight colour (the rollout's target). */
  highlight: boolean;
}

const HEIGHT = 220;

/**
 * Devices per version as bars (uPlot draws on a canvas). The same numbers are in the table
 * beside it, which is what a screen reader reads; the canvas is hidden from it.
 */
export function BarChart({ bars, label }: { bars: Bar[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = bars.map((b) => `${b.label}:${b.highlight}`).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const labels = bars.map((b) => b.label);
    const colour = (name: string) => getComputedStyle(el).getPropertyValue(name).trim() || '#555';
    const options: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: HEIGHT,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [-0.5, Math.max(labels.length, 1) - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
      axes: [
        { splits: () => labels.map((_, i) => i), values: (_u, splits) => splits.map((i) => labels[i] ?? ''), grid: { show: false }, stroke: colour('--fg') },
        { stroke: colour('--fg'), grid: { stroke: colour('--grid') }, values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')) },
      ],
      series: [
        {},
        { label: 'other versions', fill: colour('--bar'), stroke: colour('--bar'), paths: uPlot.paths.bars!({ size: [0.6, 80] }), points: { show: false } },
        { label: 'rollout target', fill: colour('--bar-target'), stroke: colour('--bar-target'), paths: uPlot.paths.bars!({ size: [0.6, 80] }), points: { show: false } },
      ],
    };
    plot.current = new uPlot(options, data(bars), el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt when the set of bars changes; new counts alone only update the data below.
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data(bars));
  });

  return html`<figure class="chart">
    <div ref=${box} class="chart-canvas" aria-hidden="true"></div>
    <figcaption>${label}</figcaption>
  </figure>`;
}

function data(bars: Bar[]): uPlot.AlignedData {
  return [
    bars.map((_, i) => i),
    bars.map((b) => (b.highlight ? null : b.value)),
    bars.map((b) => (b.highlight ? b.value : null)),
  ];
}
