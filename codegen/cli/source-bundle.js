/**
 * @module Runs the CLI of a checkout from one cached bundle of its sources.
 *
 * Loading the TypeScript sources through tsx costs a loader thread that the
 * main thread waits for, plus a round trip per module: a few hundred
 * milliseconds of every `npm run codegen`. So, in a checkout, the CLI's
 * sources are bundled once with esbuild (which tsx ships) into
 * `node_modules/.cache/taquba-codegen/`, and later runs import the bundle
 * directly. The bundle is used only when the content hash of every source
 * it was built from, and of the bundle itself, still matches; otherwise it
 * is rebuilt. Each bundled source keeps its own `import.meta.url` (written
 * into the bundle as a literal), so sources in any folder may find files
 * and packages relative to themselves. Any problem (no esbuild, a
 * read-only folder, a source reading `import.meta` for anything but its
 * URL) makes `importBundled` return undefined and the caller falls back to
 * tsx. Plain JavaScript: it runs before anything can load TypeScript.
 */

import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// Bump when the build options below change, so older bundles are rebuilt.
const FORMAT = 3;
// Files that shape the bundle without being bundled (esbuild reads compiler options and package type from them).
const SETTINGS = ["tsconfig.json", "package.json"];

function sha256(data) {
  return createHash("sha256").update(data).digest("hex");
}

async function writeAtomic(path, content) {
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, content);
  await rename(tmp, path);
}

/** An esbuild plugin that replaces each source's `import.meta.url` with that source's own file URL. */
const ownImportMetaUrl = {
  name: "own-import-meta-url",
  setup(build) {
    build.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const contents = text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href));
      return { contents, loader: /\.[cm]?ts$/.test(args.path) ? "ts" : "js" };
    });
  },
};

/** Whether every recorded source still has the recorded hash. */
async function sourcesMatch(root, sources) {
  const hashes = await Promise.all(Object.keys(sources).map((p) => readFile(resolve(root, p)).then(sha256, () => undefined)));
  return Object.values(sources).every((h, i) => hashes[i] === h);
}

/**
 * Imports the module at `entry` (a file URL of `codegen/cli/cli.ts`) from a
 * bundle that is current with the sources, building it when needed.
 * Resolves to undefined when bundling is not possible here.
 *
 * @param {string} entry
 * @param {string} [cacheDir] where the bundle and its manifest live (tests pass their own)
 */
export async function importBundled(entry, cacheDir) {
  try {
    const entryPath = fileURLToPath(entry);
    // The entry is codegen/cli/cli.ts: the checkout's root is three folders up.
    const root = dirname(dirname(dirname(entryPath)));
    cacheDir ??= join(root, "node_modules", ".cache", "taquba-codegen");
    const bundlePath = join(cacheDir, "cli.mjs");
    const manifestPath = join(cacheDir, "manifest.json");
    const require = createRequire(entry);
    const esbuild = createRequire(require.resolve("tsx/package.json"))("esbuild");
    const manifest = await readFile(manifestPath, "utf8").then(JSON.parse, () => undefined);
    if (
      manifest?.format === FORMAT &&
      manifest.esbuild === esbuild.version &&
      manifest.entry === entryPath &&
      (await sourcesMatch(root, manifest.sources)) &&
      (await readFile(bundlePath).then(sha256, () => undefined)) === manifest.bundle
    ) {
      return await import(pathToFileURL(bundlePath).href);
    }
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: [entryPath],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      write: false,
      metafile: true,
      logLevel: "silent",
      plugins: [ownImportMetaUrl],
    });
    const sources = {};
    for (const p of Object.keys(result.metafile.inputs)) {
      const content = await readFile(resolve(root, p));
      const text = content.toString("utf8");
      // Only import.meta.url is rewritten: a source reading anything else of import.meta must not be bundled.
      if (/import\.meta(?!\.url\b)/.test(text)) return undefined;
      sources[p] = sha256(content);
    }
    for (const p of SETTINGS) {
      const content = await readFile(resolve(root, p)).catch(() => undefined);
      if (content !== undefined) sources[p] = sha256(content);
    }
    const bundle = result.outputFiles[0]?.contents;
    if (bundle === undefined) return undefined;
    await mkdir(cacheDir, { recursive: true });
    await writeAtomic(bundlePath, bundle);
    await writeAtomic(
      manifestPath,
      `${JSON.stringify({ format: FORMAT, esbuild: esbuild.version, entry: entryPath, bundle: sha256(bundle), sources }, null, 2)}\n`,
    );
    return await import(pathToFileURL(bundlePath).href);
  } catch {
    return undefined;
  }
}
