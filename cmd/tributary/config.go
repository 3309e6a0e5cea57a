package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// envPrefix starts every environment variable Tributary reads.
const envPrefix = "TRIBUTARY"

// config gives every command one precedence order for its settings:
//
//	flags  >  environment TRIBUTARY_*  >  config file (YAML)  >  defaults
//
// Each flag has one key, its name with dashes as dots, which is Kafka's
// spelling of the setting: --log-dirs is log.dirs in the file and
// TRIBUTARY_LOG_DIRS in the environment; --segment-bytes is segment.bytes.
// The defaults are the flags' defaults, so help shows them.
//
// Commands keep their flags in local variables; before a command runs, load
// sets each flag that was not given on the command line from the
// environment or the file, so the locals hold the final value and a command
// never asks viper itself.
type config struct {
	v    *viper.Viper
	file string // --config, or TRIBUTARY_CONFIG
}

func newConfig() *config {
	v := viper.New()
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	return &config{v: v}
}

// key is the configuration key of a flag.
func key(flag string) string { return strings.ReplaceAll(flag, "-", ".") }

// env is the environment variable of a key.
func env(key string) string {
	return envPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// fromConfigAnnotation marks a flag that load set from the file or the
// environment.
const fromConfigAnnotation = "tributary-from-config"

// setByUser is whether the flag was given on the command line, in the
// config file or in the environment.
func setByUser(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && (f.Changed || len(f.Annotations[fromConfigAnnotation]) > 0)
}

// load reads the config file, if one is named, and applies the environment
// and the file to every flag of cmd not set on the command line.
func (c *config) load(cmd *cobra.Command) error {
	file := c.file
	if file == "" {
		file = os.Getenv(env("config"))
	}
	if file != "" {
		c.v.SetConfigFile(file)
		if err := c.v.ReadInConfig(); err != nil {
			return fmt.Errorf("config file %s: %w", file, err)
		}
	}
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		k := key(f.Name)
		if !c.v.IsSet(k) {
			return
		}
		var err error
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			err = sv.Replace(c.v.GetStringSlice(k))
		} else {
			err = f.Value.Set(c.v.GetString(k))
		}
		// Not Changed (that is the command line's), but set: a default
		// derived from other settings must not override it (setByUser).
		cmd.Flags().SetAnnotation(f.Name, fromConfigAnnotation, []string{"true"})
		if err != nil {
			from := "config file " + file
			if _, ok := os.LookupEnv(env(k)); ok {
				from = "environment " + env(k)
			}
			errs = append(errs, fmt.Errorf("%s (from %s): %w", k, from, err))
		}
	})
	return errors.Join(errs...)
}
