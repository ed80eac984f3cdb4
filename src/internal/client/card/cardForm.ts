/**
 * The two forms a v1.0 card is served in, read alike: proto JSON (what our
 * server serves, and the form a signature covers whole) and the SDK's object
 * form (its Express `agentCardHandler` serves `JSON.stringify` of its model,
 * with `{ $case, value }` for each `oneof`).
 *
 * @internal
 */
import { AgentCard } from "@a2a-js/sdk"

/** Whether a security scheme is in the SDK's object form: `{ scheme: { $case, value } }`. */
const isObjectFormScheme = (scheme: unknown): boolean => {
  const inner = (scheme as { scheme?: unknown } | null)?.scheme
  return typeof inner === "object" && inner !== null && typeof (inner as { $case?: unknown }).$case === "string"
}

/** Whether a card's security schemes, the card's only `oneof` fields, are in the SDK's object form. */
const isObjectForm = (card: unknown): boolean => {
  const schemes = (card as { securitySchemes?: unknown } | null)?.securitySchemes
  return typeof schemes === "object" && schemes !== null && Object.values(schemes).some(isObjectFormScheme)
}

/**
 * The SDK resolver's `normalizeAgentCard`, reading both forms. The SDK tells
 * them apart by the security schemes alone: it reads an object-form card
 * with schemes as proto JSON (`AgentCard.fromJSON`), which loses them, and
 * keeps a proto-JSON card without schemes as served, its empty fields
 * missing. Here an object-form card is kept as served, a v0.3 card or a
 * proto-JSON card with schemes is what the SDK makes of it, and any other
 * is decoded with `AgentCard.fromJSON` (an object-form card without schemes
 * reads the same). Decoding again changes nothing, as the SDK's client
 * factory normalizes the card it is given.
 *
 * @internal
 */
export const normalizer = (sdk: (card: unknown) => AgentCard) => (served: unknown): AgentCard => {
  if (isObjectForm(served)) return served as AgentCard
  const normalized = sdk(served)
  return normalized === served ? AgentCard.fromJSON(served) : normalized
}
