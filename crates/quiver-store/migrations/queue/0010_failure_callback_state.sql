-- How a dead letter's failure callback went (failureCallbackInfo of workflow runs' dead letters): JSON of
-- {state, response_status, response_body, response_headers}, or NULL when it has none.
ALTER TABLE dead_letters ADD COLUMN failure_callback TEXT;
