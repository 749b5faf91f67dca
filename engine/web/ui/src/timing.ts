/** A timing mark for the page's opening (read by benchmarks/studio_open and the browser's performance panel). */
export function mark(name: string): void {
  try {
    performance.mark(name);
  } catch {
    // timing marks are optional
  }
}
