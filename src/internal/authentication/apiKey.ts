/**
 * The API-key authenticator: a header's value looked up, in constant time,
 * in a table of caller ids and their keys.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import type * as Authentication from "../../Authentication.js"
import * as internalAuthentication from "./authenticator.js"

const digest = (key: string): Buffer => createHash("sha256").update(key, "utf8").digest()

const reveal = (key: Redacted.Redacted<string> | string): string => Redacted.isRedacted(key) ? Redacted.value(key) : key

const entriesOf = (
  keys: Authentication.ApiKeyOptions["keys"]
): ReadonlyArray<readonly [string, Redacted.Redacted<string> | string]> =>
  Symbol.iterator in keys
    ? Array.from(keys as Iterable<readonly [string, Redacted.Redacted<string> | string]>)
    : Object.entries(keys)

/**
 * Throws, naming the callers but never a key, on an empty caller id, an
 * empty key, or one key held by two callers: a table like that is a
 * mistake to stop at start-up, not a request to refuse.
 *
 * @internal
 */
export const make = (options: Authentication.ApiKeyOptions): internalAuthentication.Authenticator => {
  const header = options.header ?? "X-API-Key"
  if (header.trim() === "") throw new Error("Authentication.apiKey: the header name is empty")
  const headerKey = header.toLowerCase()
  const table: Array<{ readonly id: string; readonly digest: Buffer }> = []
  for (const [id, key] of entriesOf(options.keys)) {
    if (id === "") throw new Error("Authentication.apiKey: a caller id is empty")
    if (reveal(key) === "") throw new Error(`Authentication.apiKey: the key of caller "${id}" is empty`)
    const entry = { id, digest: digest(reveal(key)) }
    const twin = table.find((other) => other.digest.equals(entry.digest))
    if (twin !== undefined) {
      throw new Error(`Authentication.apiKey: callers "${twin.id}" and "${id}" have the same key`)
    }
    table.push(entry)
  }
  if (table.length === 0) throw new Error("Authentication.apiKey: the table of keys is empty")

  const authenticate: internalAuthentication.Authenticator = (request) =>
    Effect.suspend(() => {
      const presented = request.headers[headerKey]
      if (presented === undefined || presented === "") {
        return Effect.fail(
          new internalAuthentication.Unauthenticated({
            reason: "MissingCredentials",
            message: `no ${header} header`
          })
        )
      }
      // Equal-length digests compared with every key, whatever matched before: how long this
      // takes says nothing of which key, or how much of one, the request holds.
      const candidate = digest(presented)
      let found: string | undefined
      for (const entry of table) {
        const equal = timingSafeEqual(candidate, entry.digest)
        found = equal ? entry.id : found
      }
      return found === undefined
        ? Effect.fail(
          new internalAuthentication.Unauthenticated({
            reason: "InvalidCredentials",
            message: `the ${header} header holds no known key`
          })
        )
        : Effect.succeed({ id: found, name: found })
    })
  return Object.assign(authenticate, {
    credentialHeaders: [headerKey],
    scheme: internalAuthentication.schemeOf(
      options.schemeName ?? "apiKey",
      {
        scheme: {
          $case: "apiKeySecurityScheme",
          value: { name: header, location: "header", description: options.description ?? "" }
        }
      },
      `ApiKey header="${header}"`
    )
  })
}
