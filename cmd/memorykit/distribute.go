package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/pgstore"
)

// distributeFlag registers migrate's --distribute.
func distributeFlag(fs *pflag.FlagSet, o *options) {
	fs.BoolVar(&o.distribute, "distribute", false,
		"after migrating, distribute the schema by tenant on the Citus head node --dsn names (pgstore.Distribute; running it again changes nothing)")
}

// checkDistribute refuses --distribute with --sqlite.
func checkDistribute(o *options) error {
	if o.distribute && o.sqlite != "" {
		return usagef("--distribute needs --dsn (a Citus head node), not --sqlite")
	}
	return nil
}

// runDistribute is migrate's --distribute step, run after the migration.
func runDistribute(ctx context.Context, c *cli, o *options) error {
	pool, err := pgxpool.New(ctx, o.dsn)
	if err != nil {
		return usagef("--dsn does not parse")
	}
	defer pool.Close()
	schema := o.schema
	if schema == "" {
		schema = pgstore.DefaultSchema
	}
	if err := pgstore.Distribute(ctx, pool, schema); err != nil {
		var e *memorykit.Error
		if errors.As(err, &e) {
			switch e.Reason {
			case pgstore.ReasonCitusUnavailable:
				return errors.New("the database has no citus extension: install Citus on every node, run CREATE EXTENSION citus on the head node and the workers, add the workers with citus_add_node, then run 'memorykit migrate --distribute' again")
			case pgstore.ReasonNotCoordinator:
				return errors.New("--dsn names a Citus worker: point it at the head node")
			}
		}
		return err
	}
	fmt.Fprintf(c.out, "schema %s: distributed by tenant_id\n", schema)
	return nil
}
