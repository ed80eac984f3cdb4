/**
 * Whether a value is JSON data, the only thing a data part or metadata can
 * carry across the wire. Anything else would fail later, where it can no
 * longer be reported well: `JSON.stringify` throws on a bigint or a cycle
 * after the task is stored, a task store's `structuredClone` throws on a
 * function and leaves the task WORKING, and a `Map` or a `Date` silently
 * becomes something else. The type `Part.Json` refuses such values at
 * compile time; this check is for those typed `any` (and is the check of the
 * `Part.Json` schema).
 *
 * @internal
 */
import type { Part as WirePart, TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { types } from "node:util"
import type * as Part from "../../Part.js"

/** Where a value stops being JSON data, and what was found there. @internal */
export interface NotJson {
  readonly path: string
  readonly found: string
}

const maxDepth = 256

const identifier = /^[A-Za-z_$][\w$]*$/

const child = (path: string, key: string | number): string =>
  typeof key === "number"
    ? `${path}[${key}]`
    : identifier.test(key)
    ? `${path}.${key}`
    : `${path}[${JSON.stringify(key)}]`

const describe = (value: unknown): string => {
  switch (typeof value) {
    case "number":
      return `the number ${value}`
    case "undefined":
      return "undefined"
    case "object": {
      const constructor: unknown = (Object.getPrototypeOf(value) as { constructor?: unknown } | null)?.constructor
      // A class instance, or an object made on another prototype (such as `Data.struct`): encode it to plain data first.
      return typeof constructor === "function" && constructor !== Object && constructor.name !== ""
        ? `a ${constructor.name}`
        : "an object whose prototype is not Object.prototype"
    }
    default:
      return `a ${typeof value}`
  }
}

const isPlainObject = (value: object): boolean => {
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/**
 * What `value` holds that is not JSON data, or none. `keys` and `ancestors`
 * are the path to `value`; on a finding they are left at the offending
 * value, so the path text is only built for it.
 */
const walk = (value: unknown, keys: Array<string | number>, ancestors: Array<object>): string | undefined => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined
    case "number":
      return Number.isFinite(value) ? undefined : describe(value)
    case "object": {
      if (value === null) return undefined
      if (ancestors.includes(value)) return "a reference to an enclosing value (a cycle)"
      if (ancestors.length >= maxDepth) return `values nested deeper than ${maxDepth} levels`
      // It answers for its target, and a task store's `structuredClone` refuses it: a reactive object, say.
      if (types.isProxy(value)) return "a Proxy"
      const isArray = Array.isArray(value)
      if (!isArray && !isPlainObject(value)) return describe(value)
      ancestors.push(value)
      if (isArray) {
        for (let i = 0; i < value.length; i++) {
          keys.push(i)
          const found = walk(value[i], keys, ancestors)
          if (found !== undefined) return found
          keys.pop()
        }
      } else {
        for (const key of Object.keys(value)) {
          keys.push(key)
          const field = (value as Record<string, unknown>)[key]
          // An absent optional field: JSON leaves the key out, as the type means.
          const found = field === undefined ? undefined : walk(field, keys, ancestors)
          if (found !== undefined) return found
          keys.pop()
        }
      }
      ancestors.pop()
      return undefined
    }
    default:
      return describe(value)
  }
}

/**
 * The first place where `value` is not JSON data (null, booleans, finite
 * numbers, strings, arrays and plain objects of these, without cycles; an
 * object field that is `undefined` counts as absent), or none.
 *
 * @internal
 */
export const notJson = (value: unknown, path: string): NotJson | undefined => {
  const keys: Array<string | number> = []
  let found: string | undefined
  try {
    found = walk(value, keys, [])
  } catch (error) {
    // A getter or a proxy that throws.
    found = `a value that could not be read (${error instanceof Error ? error.message : String(error)})`
  }
  return found === undefined ? undefined : { path: keys.reduce<string>(child, path), found }
}

/** The first data part of `parts` that is not JSON data. @internal */
export const partsNotJson = (parts: ReadonlyArray<Part.Part>, path: string): NotJson | undefined => {
  for (const [i, part] of parts.entries()) {
    if (part._tag !== "Data") continue
    const problem = notJson(part.data, `${path}[${i}].data`)
    if (problem !== undefined) return problem
  }
  return undefined
}

/** The first data part of `artifacts` that is not JSON data. @internal */
export const artifactsNotJson = (artifacts: ReadonlyArray<Part.Artifact>, path: string): NotJson | undefined => {
  for (const [i, artifact] of artifacts.entries()) {
    const problem = partsNotJson(artifact.parts, `${path}[${i}].parts`)
    if (problem !== undefined) return problem
  }
  return undefined
}

const wirePartNotJson = (part: WirePart, path: string): NotJson | undefined =>
  (part.metadata === undefined ? undefined : notJson(part.metadata, `${path}.metadata`)) ??
    (part.content?.$case === "data" ? notJson(part.content.value, `${path}.data`) : undefined)

/**
 * The first value of a status update that is not JSON data, among those its
 * type leaves open (metadata and data parts).
 *
 * @internal
 */
export const statusNotJson = (event: TaskStatusUpdateEvent, path: string): NotJson | undefined => {
  const message = event.status?.message
  const problem = (event.metadata === undefined ? undefined : notJson(event.metadata, `${path}.metadata`)) ??
    (message?.metadata === undefined ? undefined : notJson(message.metadata, `${path}.status.message.metadata`))
  if (problem !== undefined || message === undefined) return problem
  for (const [i, part] of message.parts.entries()) {
    const partProblem = wirePartNotJson(part, `${path}.status.message.parts[${i}]`)
    if (partProblem !== undefined) return partProblem
  }
  return undefined
}
