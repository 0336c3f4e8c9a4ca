-- Contract section 21: a tools/call answered input_required is sent again with
-- the person's answers, so one mutation may be carried by several requests.
-- The row counts them: `sends`, how many tools/call requests carried it;
-- NULL on rows written before, and on rows that never settled by a send.
ALTER TABLE mutation_outcomes ADD COLUMN sends INTEGER;
