/**
 * Bundles the server for `npm start`: dist/main.js (the `baton` command line) and its lazily loaded
 * chunks in dist/chunks/, with source maps.
 *
 * effect and the @effect packages are bundled, so only the modules Baton uses are in the bundle
 * (their packages declare no side effects), and loading one file is faster than resolving hundreds.
 * The @effect/platform index is bundled without its docs UIs (Scalar and Swagger UI, megabytes of
 * JavaScript each): src/http/docs-page.ts imports Scalar by its own path, so it lands in a chunk
 * that is loaded on the first request for the docs page. Every other package stays in
 * node_modules and is imported from there at run time (PGlite finds its WebAssembly and data files
 * next to its own modules), except a dependency that a bundled package has in a node_modules of its
 * own, whose version the top-level one may not be.
 *
 *   node scripts/build.mjs [--outdir DIR]   (npm run build)
 */
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
// `--outdir DIR` builds elsewhere (a directory below the project, so node_modules resolves as from
// dist/): tests build a private bundle and never replace the one `npm start` runs.
const outdirArg = process.argv.indexOf("--outdir")
const outdir = outdirArg === -1 ? path.join(root, "dist") : path.resolve(process.argv[outdirArg + 1])
const topLevel = fs.realpathSync(path.join(root, "node_modules")) + path.sep
const bundled = /^(effect|@effect\/[^/]+|fast-check|pure-rand)(\/|$)/

/** Bare imports stay external unless they are effect packages or resolve below another package. */
const externals = {
  name: "externals",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.path.startsWith("node:") || bundled.test(args.path)) return undefined
      if (args.pluginData === "resolving") return undefined
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: "resolving"
      })
      if (resolved.errors.length > 0 || resolved.external) return { path: args.path, external: true }
      const nested = resolved.path.startsWith(topLevel) && resolved.path.slice(topLevel.length).includes(`${path.sep}node_modules${path.sep}`)
      return nested ? undefined : { path: args.path, external: true }
    })
  }
}

/**
 * Modules of a package's index that the bundle must not reach through the index: the docs UIs
 * (src/http/docs-page.ts imports Scalar by its own path, so it lands in a lazily loaded chunk), and
 * modules that re-export a whole external package (`export * from "undici"`), which would load that
 * package at start even though nothing uses it.
 */
const notFromIndex = {
  "@effect/platform": ["HttpApiScalar", "HttpApiSwagger"],
  "@effect/platform-node": ["Undici"]
}

const indexes = {
  name: "indexes",
  setup(build) {
    const names = Object.keys(notFromIndex).map((name) => name.replace(/[/]/g, "\\/"))
    build.onResolve({ filter: new RegExp(`^(${names.join("|")})$`) }, async (args) => {
      if (args.pluginData === "resolving") return undefined
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: "resolving"
      })
      return { path: resolved.path, namespace: "index", pluginData: args.path }
    })
    build.onLoad({ filter: /.*/, namespace: "index" }, (args) => {
      const dropped = new Set(notFromIndex[args.pluginData])
      const lines = fs.readFileSync(args.path, "utf8").split("\n")
      const kept = lines.filter((line) => !dropped.has(/^export \* as (\w+) from/.exec(line)?.[1]))
      if (kept.length !== lines.length - dropped.size) {
        throw new Error(`${args.path} no longer re-exports ${[...dropped].join(" and ")} as expected`)
      }
      return { contents: kept.join("\n"), loader: "js", resolveDir: path.dirname(args.path) }
    })
  }
}

fs.rmSync(outdir, { recursive: true, force: true })
await esbuild.build({
  absWorkingDir: root,
  entryPoints: { main: "src/main.ts" },
  outdir,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  logLevel: "warning",
  plugins: [indexes, externals]
})
