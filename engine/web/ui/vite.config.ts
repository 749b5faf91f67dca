import { defineConfig, type Plugin } from 'vitest/config';
import react from '@vitejs/plugin-react';

/**
 * index.html starts ELK's worker before the app's script has loaded, so that its 1.6 MB script is fetched and
 * compiled while the page's first requests are answered. The worker script's file name has a hash, known once
 * the bundle is written: this puts it in place of 'ELK_WORKER_URL' in the page (in dev the app starts the
 * worker itself).
 */
function elkWorkerUrlInPage(): Plugin {
  let base = '/';
  return {
    name: 'diagrama:elk-worker-url',
    configResolved(config) {
      base = config.base;
    },
    transformIndexHtml: {
      order: 'post',
      handler(html, ctx) {
        const worker = Object.values(ctx.bundle ?? {}).find((f) => /^assets\/elk-worker\.min-[\w-]+\.js$/.test(f.fileName));
        return html.replace("'ELK_WORKER_URL'", JSON.stringify(worker ? `${base}${worker.fileName}` : ''));
      },
    },
  };
}

// The server returns dist/index.html at `/` and serves the assets under `/ui/`.
export default defineConfig({
  base: '/ui/',
  plugins: [react(), elkWorkerUrlInPage()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});
