-- A delivery receipt keeps no copy of the input (contract section 17): the
-- trigger's message and script, secrets included, rested here for ever. A
-- duplicate that finds its run never started now starts it from its own
-- (identical) delivery instead, so the column has no job left.
ALTER TABLE deliveries DROP COLUMN start_input;
