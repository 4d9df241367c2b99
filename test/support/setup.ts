/**
 * Runs before each test file. The files of a worker share one module graph (vitest's `isolate: false`,
 * which saves each file from importing the whole server again), so anything a file changes in a
 * shared module must be put back here.
 *
 * @effect/vitest's `it.layer` replaces `it.effect`, `it.scoped` and `it.layer` on the shared `it`
 * object with versions bound to that file's Layer; without this, the next file's tests would run in
 * the previous file's (closed) runtime.
 */
import { it } from "@effect/vitest"

const methods = ["effect", "scoped", "live", "scopedLive", "flakyTest", "layer", "prop"] as const
type Methods = Pick<typeof it, (typeof methods)[number]>

const holder = globalThis as { batonPristineIt?: Methods }
holder.batonPristineIt ??= Object.fromEntries(methods.map((name) => [name, it[name]])) as unknown as Methods
Object.assign(it, holder.batonPristineIt)
