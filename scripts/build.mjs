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

/**
 * Packages that a bundled module imports at its top for what Baton never does at start, loaded on
 * first use instead (as src/domain/on-first-use.ts does for Baton's own): @effect/cli's parsers of
 * option files, which Baton's command line has none of (0.8MB of heap); the WebSocket server, made
 * on the first WebSocket request (0.9MB); the MIME types of files served (0.3MB).
 */
const onFirstUse = {
  "@effect/cli/dist/esm/internal/files.js": ["ini", "toml", "yaml"],
  "@effect/platform-node/dist/esm/internal/httpServer.js": ["ws"],
  "@effect/platform-node/dist/esm/internal/httpPlatform.js": ["mime"]
}

const firstUse = {
  name: "first-use",
  setup(build) {
    for (const [module, packages] of Object.entries(onFirstUse)) {
      const filter = new RegExp(`node_modules[\\/]${module.replace(/[/.]/g, (c) => (c === "/" ? "[\\/]" : "\\."))}$`)
      build.onLoad({ filter }, (args) => {
        let contents = fs.readFileSync(args.path, "utf8")
        for (const name of packages) {
          // `import * as X from "name"` or, for a CommonJS package, `import X from "name"`: both are its exports.
          const line = new RegExp(`^import (?:\\* as )?(\\w+) from "${name}";$`, "m")
          if (!line.test(contents)) throw new Error(`${args.path} no longer imports ${name} as expected`)
          // Each property read requires the package (once: require caches it), so `Yaml.parse(…)` works unchanged.
          contents = contents.replace(line, (_, binding) => `const ${binding} = new Proxy({}, { get: (_, key) => __loadOnFirstUse(${JSON.stringify(name)})[key] });`)
        }
        contents = `import { createRequire as __createRequire } from "node:module";\nconst __loadOnFirstUse = __createRequire(import.meta.url);\n${contents}`
        return { contents, loader: "js", resolveDir: path.dirname(args.path) }
      })
    }
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
  plugins: [indexes, firstUse, externals]
})

// V8 keeps each module's source text for as long as the process runs, one byte a character when
// every character is Latin-1 and two otherwise. esbuild escapes the characters beyond ASCII in code
// but copies the comments it keeps as they are, so one "−" in a comment doubled dist/main.js in
// memory (2.7 instead of 1.4 MB). Written as \u escapes they mean the same anywhere in JavaScript.
for (const name of fs.readdirSync(outdir, { recursive: true })) {
  if (!name.endsWith(".js")) continue
  const file = path.join(outdir, name)
  const text = fs.readFileSync(file, "utf8")
  const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
  if (ascii !== text) fs.writeFileSync(file, ascii)
}
