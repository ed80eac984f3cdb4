/**
 * The JSON type an HTTP+JSON answer is written in, as the request's
 * `Accept` asks (RFC 9110 §12.5.1): `application/json` or
 * `application/a2a+json`, whichever has the higher weight. A media range
 * the client names wins over a wildcard of the same weight; between two it
 * names with one weight, the first listed wins. A client that states no
 * preference between them, or accepts neither, gets {@link noPreference}:
 * every answer has a JSON body, an error's included, so none is refused
 * with 406.
 *
 * @internal
 */
import { A2A_CONTENT_TYPE } from "@a2a-js/sdk"

/** @internal */
export const json = "application/json"

/** @internal */
export type JsonType = typeof json | typeof A2A_CONTENT_TYPE

/**
 * The type of a client that names neither (no `Accept`, `*\/*`,
 * `application/*`, or only other types). `application/json`: what A2A 1.0.0
 * required and every JSON client reads (the TCK among them, which sends
 * `*\/*` and checks for it); spec 1.0.1's `application/a2a+json` (a SHOULD)
 * goes to every client that names it, as the SDK's client does.
 *
 * @internal
 */
export const noPreference: JsonType = json

interface Range {
  readonly type: string
  readonly subtype: string
  readonly weight: number
}

// RFC 9110 §12.4.2: at most three decimals, 0 to 1.
const qvalue = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/

/** The ranges of an `Accept` value, in order; one with a malformed weight is left out. */
const ranges = (accept: string): ReadonlyArray<Range> =>
  accept.split(",").flatMap((part) => {
    const [range = "", ...parameters] = part.split(";")
    const [type, subtype, ...extra] = range.trim().toLowerCase().split("/")
    if (!type || !subtype || extra.length > 0) return []
    let weight = 1
    for (const parameter of parameters) {
      const [name = "", value = ""] = parameter.split("=", 2)
      if (name.trim().toLowerCase() !== "q") continue
      if (!qvalue.test(value.trim())) return []
      weight = Number(value.trim())
    }
    return [{ type, subtype, weight }]
  })

interface Score {
  readonly weight: number
  /** 2 when named, 1 by `type/*`, 0 by `*\/*`. */
  readonly precision: number
  readonly order: number
}

// The most precise range that covers `mediaType` decides its weight (RFC 9110 §12.5.1).
const scoreOf = (listed: ReadonlyArray<Range>, mediaType: string): Score => {
  const [type, subtype] = mediaType.split("/")
  let best: Score = { weight: 0, precision: -1, order: listed.length }
  listed.forEach((range, order) => {
    const precision = range.type === type && range.subtype === subtype
      ? 2
      : range.type === type && range.subtype === "*"
      ? 1
      : range.type === "*" && range.subtype === "*"
      ? 0
      : -1
    if (precision > best.precision) best = { weight: range.weight, precision, order }
  })
  return best
}

/**
 * The JSON type to answer a request whose `Accept` header is `accept`.
 *
 * @internal
 */
export const jsonType = (accept: string | undefined): JsonType => {
  if (accept === undefined || accept.trim() === "") return noPreference
  const listed = ranges(accept)
  const plain = scoreOf(listed, json)
  const a2a = scoreOf(listed, A2A_CONTENT_TYPE)
  if (plain.weight === 0 && a2a.weight === 0) return noPreference
  if (plain.weight !== a2a.weight) return plain.weight > a2a.weight ? json : A2A_CONTENT_TYPE
  if (plain.precision !== a2a.precision) return plain.precision > a2a.precision ? json : A2A_CONTENT_TYPE
  if (plain.precision < 2) return noPreference
  return plain.order < a2a.order ? json : A2A_CONTENT_TYPE
}
