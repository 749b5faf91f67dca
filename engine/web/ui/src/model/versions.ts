/**
 * Version history for display: when a version was saved, and what restoring it would change in the file (a
 * line diff with a little context, as `DiffView` shows a unified diff).
 */
import { diffComm } from 'node-diff3';

/** When a version was saved (seconds since the epoch, as the server sends it). */
export function savedText(saved: number): string {
  return new Date(saved * 1000).toLocaleString(undefined, {
    month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

/**
 * The lines that differ from `from` to `to`: `-` for a line only `from` has, `+` for one only `to` has, and
 * `context` unchanged lines around each change (longer unchanged runs are cut to a `@@` line). Empty when equal.
 */
export function lineDiff(from: string, to: string, context = 2): string {
  const lines = (text: string) => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));
  const parts = diffComm(lines(from), lines(to));
  if (parts.every((p) => p.common)) return '';
  const out: string[] = [];
  parts.forEach((part, i) => {
    if (part.common) {
      const same = part.common;
      const head = i > 0 ? same.slice(0, context) : [];
      const tail = i < parts.length - 1 ? same.slice(Math.max(head.length, same.length - context)) : [];
      out.push(...head.map((l) => ` ${l}`));
      if (head.length + tail.length < same.length) out.push(`@@ ${same.length - head.length - tail.length} unchanged lines`);
      out.push(...tail.map((l) => ` ${l}`));
    } else {
      out.push(...part.buffer1.map((l) => `-${l}`), ...part.buffer2.map((l) => `+${l}`));
    }
  });
  return out.join('\n');
}
