// Builds one self-contained ES module, ../tb_plugin/static/index.js, that TensorBoard's plugin entry
// imports and calls render() on. CSS is inlined into the JS (see src/index.tsx), so there are no other
// files to serve. The output name is fixed and nothing time-dependent goes in, so the same source gives
// byte-identical output (CI rebuilds and compares with the committed bundle).
//
// Not library mode: Vite keeps whitespace in library-mode ES output, which doubles the size.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import "./src/node20Polyfills.ts";

const outDir = fileURLToPath(new URL("../tb_plugin/static", import.meta.url));
const entry = fileURLToPath(new URL("./src/index.tsx", import.meta.url));

export default defineConfig({
  oxc: {
    jsx: { runtime: "automatic" },
  },
  build: {
    outDir,
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    minify: true,
    copyPublicDir: false,
    modulePreload: false,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 1024,
    rolldownOptions: {
      input: { index: entry },
      // Keep the entry's exports (render), which an app build would otherwise drop.
      preserveEntrySignatures: "exports-only",
      output: {
        format: "es",
        entryFileNames: "index.js",
        codeSplitting: false,
        comments: { legal: false },
      },
    },
  },
  test: {
    environment: "happy-dom",
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["src/testSetup.ts"],
  },
});
