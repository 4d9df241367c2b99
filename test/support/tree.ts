/** Reading nested JSON-like values (a settings tree, a report) by dotted path. */

/** The value at a dotted path of a tree (`"server.api.port"`), undefined where the path leaves the tree. */
export const at = (tree: unknown, key: string): unknown =>
  key.split(".").reduce<unknown>(
    (node, k) => (typeof node === "object" && node !== null ? (node as Record<string, unknown>)[k] : undefined),
    tree
  )

/** The keys of the object at a dotted path, in their order ([] where there is none). */
export const keysAt = (tree: unknown, key: string): Array<string> => {
  const node = at(tree, key)
  return typeof node === "object" && node !== null ? Object.keys(node) : []
}
