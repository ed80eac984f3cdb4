// Placeholder until the ledger's implementation moves here: re-exports the tag and the sweep.
export { IdempotencyLedger, sweep } from "../../IdempotencyLedger.js"
