/**
 * How deep a decoded request may nest, the bound every server transport
 * holds to (JSON-RPC, HTTP+JSON and gRPC).
 *
 * @internal
 */

/**
 * How deep a request may nest. The SDK copies messages and tasks with
 * `structuredClone`, whose limit depends on the stack (about 1900 levels
 * here, less elsewhere): past it, a run could start whose task can then not
 * be copied, saved or read. Far above any real message.
 *
 * @internal
 */
export const maxNesting = 256

/** @internal */
export const tooDeep = `Request nested deeper than ${maxNesting} levels.`

/**
 * Whether `value` nests objects and arrays more than `levels` deep. Recursive, without allocating (it runs
 * on every request): it never goes deeper than `levels`, far within the stack.
 *
 * @internal
 */
export const deeperThan = (value: unknown, levels: number): boolean => {
  // A decoded protobuf's bytes hold no nesting: not walked byte by byte.
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return false
  if (levels === 0) return true
  if (Array.isArray(value)) {
    for (const item of value) if (deeperThan(item, levels - 1)) return true
    return false
  }
  for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], levels - 1)) return true
  return false
}

/**
 * Why a decoded request is refused for its nesting (see `maxNesting`), or undefined.
 *
 * @internal
 */
export const nestingProblem = (request: unknown): string | undefined =>
  deeperThan(request, maxNesting) ? tooDeep : undefined
