import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The page talks to Cairn through the dev server's proxy (same origin, no CORS):
// start Cairn with `go run ./cmd/cairn serve --config examples/demo/cairn.yaml`.
export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/v1": process.env.CAIRN_URL ?? "http://127.0.0.1:8080" } },
});
