-- Contract section 23: aee_mutations_limited_total{tool}. Its label values
-- are the configured tools' names, not known when 0011 seeded
-- metric_counters, so a run object's batch (metric_sources) now first adds a
-- zero row for each new value of that series it names (NOT EXISTS, not
-- INSERT OR IGNORE: the upsert that fires the trigger would override the
-- IGNORE), then applies the batch as
-- before (the UPDATE only moves rows that exist). Only this series is open
-- (src/operate/metric-series.ts marks it openValues); a batch naming any
-- other unknown series is still ignored.
DROP TRIGGER metrics_sources_insert;
DROP TRIGGER metrics_sources_update;

CREATE TRIGGER metrics_sources_insert AFTER INSERT ON metric_sources BEGIN
  INSERT INTO metric_counters (name, label)
    SELECT DISTINCT json_extract(d.value, '$[0]'), json_extract(d.value, '$[1]') FROM json_each(NEW.deltas) AS d
     WHERE json_extract(d.value, '$[0]') = 'aee_mutations_limited_total'
       AND NOT EXISTS (SELECT 1 FROM metric_counters AS c
                        WHERE c.name = json_extract(d.value, '$[0]') AND c.label = json_extract(d.value, '$[1]'));
  UPDATE metric_counters
     SET value = value + (SELECT TOTAL(json_extract(d.value, '$[2]')) FROM json_each(NEW.deltas) AS d
                           WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label)
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.deltas) AS d
                  WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label);
END;
CREATE TRIGGER metrics_sources_update AFTER UPDATE OF seq ON metric_sources WHEN NEW.seq > OLD.seq BEGIN
  INSERT INTO metric_counters (name, label)
    SELECT DISTINCT json_extract(d.value, '$[0]'), json_extract(d.value, '$[1]') FROM json_each(NEW.deltas) AS d
     WHERE json_extract(d.value, '$[0]') = 'aee_mutations_limited_total'
       AND NOT EXISTS (SELECT 1 FROM metric_counters AS c
                        WHERE c.name = json_extract(d.value, '$[0]') AND c.label = json_extract(d.value, '$[1]'));
  UPDATE metric_counters
     SET value = value + (SELECT TOTAL(json_extract(d.value, '$[2]')) FROM json_each(NEW.deltas) AS d
                           WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label)
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.deltas) AS d
                  WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label);
END;
