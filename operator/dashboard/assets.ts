/**
 * @module The dashboard page's static files (public/), read once at start.
 * In a checkout they sit beside this module; in the published package this
 * module runs from dist/ and the files ship in operator/dashboard/public/.
 */
import { readdir, readFile } from "node:fs/promises";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

export interface Asset {
  readonly type: string;
  readonly body: Uint8Array;
}

/** Assets by request path (`/index.html`, `/app.js`, ...). */
export type Assets = ReadonlyMap<string, Asset>;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

const CANDIDATES = [new URL("./public/", import.meta.url), new URL("../../../operator/dashboard/public/", import.meta.url)];

export async function findAssets(): Promise<Assets> {
  for (const dir of CANDIDATES) {
    const names = await readdir(dir).catch(() => undefined);
    if (names === undefined || !names.includes("index.html")) continue;
    const out = new Map<string, Asset>();
    for (const name of names) {
      const type = TYPES[extname(name)];
      if (type !== undefined) out.set(`/${name}`, { type, body: new Uint8Array(await readFile(new URL(name, dir))) });
    }
    return out;
  }
  throw new Error(`the dashboard's page files are missing (looked in ${CANDIDATES.map((u) => fileURLToPath(u)).join(" and ")})`);
}
