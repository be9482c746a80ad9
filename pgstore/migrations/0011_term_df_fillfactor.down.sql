-- Undoes version 11: term_df's pages fill up again (the default fillfactor).
ALTER TABLE {schema}.term_df RESET (fillfactor);
