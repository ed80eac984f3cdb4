// Placeholder until the ledger's errors move here: re-exports them from the public module.
export { conflictCode, IdempotencyConflict, IdempotencyError, Reason } from "../../IdempotencyLedger.js"
