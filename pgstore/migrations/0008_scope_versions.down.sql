-- Undoes version 8: the per-Scope versions and the triggers that bump them
-- (CASCADE drops the six triggers with their function).
DROP FUNCTION {schema}.bump_scope_versions() CASCADE;
DROP TABLE {schema}.scope_versions;
