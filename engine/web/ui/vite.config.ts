import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The server returns dist/index.html at `/` and serves the assets under `/ui/`.
export default defineConfig({
  base: '/ui/',
  plugins: [react()],
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
