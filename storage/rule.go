package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/tenants/audit"
)

// RuleStore is the casbin adapter over the migration-managed casbin_rules table, with
// context-aware batch writes for the enforcers. Each rule's tenant is its domain value.
type RuleStore struct {
	db *DB
}

var _ policy.RuleStore = (*RuleStore)(nil)

// NewRuleStore returns the rule store over db.
func NewRuleStore(db *DB) *RuleStore { return &RuleStore{db: db} }

// adapterTimeout bounds the casbin adapter's calls, whose interface carries no context.
const adapterTimeout = 30 * time.Second

// maxRuleValues is the number of value columns, v0..v5.
const maxRuleValues = authz.MaxRuleValues

// maxRuleValueLength is the length of each value column, in characters. SQLite would accept
// longer values; checking here makes every dialect refuse them alike.
const maxRuleValueLength = 255

// ruleRow is a row of the casbin_rules table as it is written. It has no id field on purpose:
// with an auto-increment field GORM adds RETURNING id to inserts (on MariaDB too), and MariaDB's
// INSERT ... ON DUPLICATE KEY UPDATE ... RETURNING returns a row for each duplicate as well, so
// the affected-row count would no longer be the number of new rules.
type ruleRow struct {
	TenantID string `gorm:"column:tenant_id"`
	PType    string `gorm:"column:ptype"`
	V0       string `gorm:"column:v0"`
	V1       string `gorm:"column:v1"`
	V2       string `gorm:"column:v2"`
	V3       string `gorm:"column:v3"`
	V4       string `gorm:"column:v4"`
	V5       string `gorm:"column:v5"`
	RuleKey  string `gorm:"column:rule_key"`
}

// storedRule is a row of casbin_rules as it is read, with the id that orders the rules as they
// were added.
type storedRule struct {
	ID   int64   `gorm:"column:id"`
	Rule ruleRow `gorm:"embedded"`
}

func (storedRule) TableName() string { return "casbin_rules" }

func (ruleRow) TableName() string { return "casbin_rules" }

// newRuleRow converts one rule of tenant into its row, with its dedupe key.
func newRuleRow(tenant, ptype string, values []string) (ruleRow, error) {
	if ptype == "" || len(ptype) > 8 {
		return ruleRow{}, fmt.Errorf("casbin rule: ptype %q must have 1 to 8 characters", ptype)
	}
	if len(values) > maxRuleValues {
		return ruleRow{}, fmt.Errorf("casbin rule %s: %d values, at most %d are stored", ptype, len(values), maxRuleValues)
	}
	var v [maxRuleValues]string
	for i, s := range values {
		if utf8.RuneCountInString(s) > maxRuleValueLength {
			return ruleRow{}, fmt.Errorf("casbin rule %s: value %d is longer than %d characters", ptype, i, maxRuleValueLength)
		}
		v[i] = s
	}
	return ruleRow{
		TenantID: tenant, PType: ptype, V0: v[0], V1: v[1], V2: v[2], V3: v[3], V4: v[4], V5: v[5],
		RuleKey: authz.RuleKey(ptype, v[:]),
	}, nil
}

// line is the rule as casbin loads it: ptype, then the values without trailing empty ones.
func (r ruleRow) line() []string {
	vals := []string{r.PType, r.V0, r.V1, r.V2, r.V3, r.V4, r.V5}
	end := len(vals)
	for end > 1 && vals[end-1] == "" {
		end--
	}
	return vals[:end]
}

// domainIndex is the position of the domain (the tenant) among a rule's values: the model is
// p = sub, dom, obj, act, eft and g = user, role, dom.
func domainIndex(ptype string) (int, error) {
	switch {
	case strings.HasPrefix(ptype, "p"):
		return 1, nil
	case strings.HasPrefix(ptype, "g"):
		return 2, nil
	}
	return 0, fmt.Errorf("casbin rule: unknown ptype %q", ptype)
}

// tenantOf returns the tenant a casbin rule belongs to: its domain value.
func tenantOf(ptype string, values []string) (string, error) {
	i, err := domainIndex(ptype)
	if err != nil {
		return "", err
	}
	if i >= len(values) || values[i] == "" {
		return "", fmt.Errorf("casbin rule %s %v has no domain (tenant)", ptype, values)
	}
	return values[i], nil
}

// ruleRows converts domain rules of one tenant into rows, refusing rules of another tenant.
func ruleRows(tenant string, rules []authz.Rule) ([]ruleRow, error) {
	rows := make([]ruleRow, 0, len(rules))
	for _, r := range rules {
		t, err := tenantOf(r.PType, r.Values)
		if err != nil {
			return nil, err
		}
		if t != tenant {
			return nil, fmt.Errorf("casbin rule %s %v belongs to tenant %q, not %q", r.PType, r.Values, t, tenant)
		}
		row, err := newRuleRow(tenant, r.PType, r.Values)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// errNoChange rolls back a rule write that changed nothing, so the revision is not bumped.
var errNoChange = errors.New("no rule changed")

// bumpPolicyRevision moves the tenant's policy revision on, inside the transaction of a rule
// change. It runs first: the row lock it takes serialises the tenant's rule writes, where taking
// it after an insert (whose foreign key check holds a shared lock on the same row) could deadlock
// two writers on MySQL.
func bumpPolicyRevision(tx *gorm.DB, tenant string) error {
	return tx.Model(&tenantRow{}).Where("tenant_id = ?", tenant).
		UpdateColumn("policy_revision", gorm.Expr("policy_revision + 1")).Error
}

// writeRules runs write in a transaction that bumps the tenant's policy revision when write
// reports a change, checks the guards against the rules it leaves, and records the audit entries
// of rows (added, or removed when removed is set) with the policy revision before and after; it
// returns write's count.
func (s *RuleStore) writeRules(ctx context.Context, tenant string, rows []ruleRow, removed bool, guards []policy.Guard, write func(tx *gorm.DB) (int, error)) (int, error) {
	entries := make([]audit.Entry, len(rows))
	for i, r := range rows {
		entries[i] = ruleEntry(ctx, r, removed)
	}
	n := 0
	err := s.db.writing(ctx).Transaction(func(tx *gorm.DB) error {
		if err := bumpPolicyRevision(tx, tenant); err != nil {
			return err
		}
		var err error
		if n, err = write(tx); err != nil {
			return err
		}
		if n == 0 {
			return errNoChange
		}
		for _, g := range guards {
			if err := checkGuard(tx, tenant, g); err != nil {
				return err
			}
		}
		var rev int64
		if err := tx.Model(&tenantRow{}).Select("policy_revision").Where("tenant_id = ?", tenant).Scan(&rev).Error; err != nil {
			return err
		}
		for i := range entries {
			entries[i].RevisionBefore, entries[i].RevisionAfter = rev-1, rev
		}
		return s.db.recordAll(tx, tenant, entries)
	})
	if errors.Is(err, errNoChange) {
		return 0, nil
	}
	return n, err
}

// checkGuard reads the tenant's role assignments and its policies of g.Action as the
// transaction's write left them, and has g check them. The transaction holds the tenant row's
// lock (bumpPolicyRevision), which every writer of the tenant's rules takes first, so the rules
// read are the latest: on Postgres each statement reads what was committed before it began, on
// MySQL a transaction's snapshot is taken at its first plain read (this one, after the lock),
// and SQLite has one writer.
func checkGuard(tx *gorm.DB, tenant string, g policy.Guard) error {
	var stored []storedRule
	err := tx.Where("tenant_id = ? AND (ptype = ? OR (ptype = ? AND v3 = ?))", tenant, "g", "p", g.Action).
		Order("id").Find(&stored).Error
	if err != nil {
		return fmt.Errorf("read the rules of tenant %q to check: %w", tenant, err)
	}
	rules := make([]authz.Rule, len(stored))
	for i, r := range stored {
		line := r.Rule.line()
		rules[i] = authz.Rule{PType: line[0], Values: line[1:]}
	}
	return g.Check(rules)
}

// ruleEntry is the audit entry of adding (or removing) the rule r: a role assignment's object
// is roles/<subject>, a policy's policies/<subject>; the detail says the rest.
func ruleEntry(ctx context.Context, r ruleRow, removed bool) audit.Entry {
	if r.PType == "g" {
		action := "roles.grant"
		if removed {
			action = "roles.revoke"
		}
		e := audit.New(ctx, action, audit.RoleObject(r.V0), 0, 0)
		e.Detail = "role " + authz.PolicySubject(r.V1)
		return e
	}
	action := "policies.add"
	if removed {
		action = "policies.remove"
	}
	e := audit.New(ctx, action, audit.PolicyObject(authz.PolicySubject(r.V0)), 0, 0)
	e.Detail = r.V4 + " " + r.V3 + " on " + r.V2
	return e
}

// AddRules stores the rules that are not stored yet and reports how many were new. Duplicates
// are skipped by the unique (tenant_id, rule_key) index, so concurrent grants cannot double up.
// The tenant's policy revision moves in the same transaction, in which the guards check the
// rules the change leaves (an error of one undoes it).
func (s *RuleStore) AddRules(ctx context.Context, tenant string, rules []authz.Rule, guards ...policy.Guard) (int, error) {
	rows, err := ruleRows(tenant, rules)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	n, err := s.writeRules(ctx, tenant, rows, false, guards, func(tx *gorm.DB) (int, error) {
		// On MySQL, DoNothing becomes ON DUPLICATE KEY UPDATE id=id, for which the server counts
		// an unchanged row as 0 affected (the driver does not set CLIENT_FOUND_ROWS), so
		// RowsAffected counts the new rules on every dialect.
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows)
		return int(res.RowsAffected), res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("add rules of tenant %q: %w", tenant, err)
	}
	return n, nil
}

// RemoveRules deletes the given rules and reports how many existed. The tenant's policy
// revision moves in the same transaction, in which the guards check the rules the change leaves
// (an error of one undoes it).
func (s *RuleStore) RemoveRules(ctx context.Context, tenant string, rules []authz.Rule, guards ...policy.Guard) (int, error) {
	rows, err := ruleRows(tenant, rules)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.RuleKey
	}
	n, err := s.writeRules(ctx, tenant, rows, true, guards, func(tx *gorm.DB) (int, error) {
		res := tx.Where("tenant_id = ? AND rule_key IN ?", tenant, keys).Delete(&ruleRow{})
		return int(res.RowsAffected), res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("remove rules of tenant %q: %w", tenant, err)
	}
	return n, nil
}

// PolicyVersion returns the tenant's policy version; a missing tenant has the zero version and
// no rules.
func (s *RuleStore) PolicyVersion(ctx context.Context, tenant string) (authz.PolicyVersion, error) {
	var rows []tenantRow
	if err := s.db.with(ctx).Where("tenant_id = ?", tenant).Limit(1).Find(&rows).Error; err != nil {
		return authz.PolicyVersion{}, fmt.Errorf("policy version of tenant %q: %w", tenant, err)
	}
	if len(rows) == 0 {
		return authz.PolicyVersion{}, nil
	}
	return rows[0].tenant().PolicyVersion(), nil
}

// load adds the rows selected by q to the model.
func load(q *gorm.DB, m model.Model) error {
	var rows []storedRule
	if err := q.Order("id").Find(&rows).Error; err != nil {
		return fmt.Errorf("load casbin rules: %w", err)
	}
	for _, r := range rows {
		if r.Rule.PType == "" {
			return fmt.Errorf("load casbin rule %d: empty ptype", r.ID)
		}
		if err := persist.LoadPolicyArray(r.Rule.line(), m); err != nil {
			return fmt.Errorf("load casbin rule %d: %w", r.ID, err)
		}
	}
	return nil
}

// LoadPolicy loads the rules of every tenant. The enforcers never call it (they load one tenant
// each); it serves tools that need the whole policy.
func (s *RuleStore) LoadPolicy(m model.Model) error {
	ctx, cancel := context.WithTimeout(context.Background(), adapterTimeout)
	defer cancel()
	return load(s.db.with(ctx), m)
}

// LoadFilteredPolicy loads one tenant's rules; filter is an policy.Filter or *policy.Filter.
func (s *RuleStore) LoadFilteredPolicy(m model.Model, filter any) error {
	var f policy.Filter
	switch v := filter.(type) {
	case policy.Filter:
		f = v
	case *policy.Filter:
		if v != nil {
			f = *v
		}
	default:
		return fmt.Errorf("casbin adapter: filter must be an policy.Filter, not %T", filter)
	}
	if f.Tenant == "" {
		return errors.New("casbin adapter: the filter names no tenant")
	}
	ctx, cancel := context.WithTimeout(context.Background(), adapterTimeout)
	defer cancel()
	return load(s.db.with(ctx).Where("tenant_id = ?", f.Tenant), m)
}

// IsFiltered reports true: every enforcer here holds one tenant's rules, never all of them.
// casbin relies on it twice: NewEnforcer skips loading every tenant's rules up front, and
// Enforcer.SavePolicy refuses to rewrite the whole table from one tenant's partial view.
func (s *RuleStore) IsFiltered() bool { return true }

// SavePolicy replaces every stored rule with the model's, in one transaction. Each rule's tenant
// is its domain value. (Enforcers over this store cannot call it: see IsFiltered.)
func (s *RuleStore) SavePolicy(m model.Model) error {
	var rows []ruleRow
	for _, sec := range []string{"p", "g"} {
		for ptype, ast := range m[sec] {
			for _, rule := range ast.Policy {
				tenant, err := tenantOf(ptype, rule)
				if err != nil {
					return err
				}
				row, err := newRuleRow(tenant, ptype, rule)
				if err != nil {
					return err
				}
				rows = append(rows, row)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), adapterTimeout)
	defer cancel()
	return s.db.writing(ctx).Transaction(func(tx *gorm.DB) error {
		// Deliberately unfiltered: saving the whole policy is the one cross-tenant write.
		if err := tx.Where("1 = 1").Delete(&ruleRow{}).Error; err != nil {
			return fmt.Errorf("save policy: %w", err)
		}
		if err := tx.Model(&tenantRow{}).Where("1 = 1").
			UpdateColumn("policy_revision", gorm.Expr("policy_revision + 1")).Error; err != nil {
			return fmt.Errorf("save policy: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 500).Error; err != nil {
			return fmt.Errorf("save policy: %w", err)
		}
		return nil
	})
}

// AddPolicy stores one rule (casbin's auto-save); a rule already stored is left as it is.
func (s *RuleStore) AddPolicy(_, ptype string, rule []string) error {
	tenant, err := tenantOf(ptype, rule)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adapterTimeout)
	defer cancel()
	_, err = s.AddRules(ctx, tenant, []authz.Rule{{PType: ptype, Values: rule}})
	return err
}

// RemovePolicy deletes one rule (casbin's auto-save); removing a missing rule is not an error.
func (s *RuleStore) RemovePolicy(_, ptype string, rule []string) error {
	tenant, err := tenantOf(ptype, rule)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adapterTimeout)
	defer cancel()
	_, err = s.RemoveRules(ctx, tenant, []authz.Rule{{PType: ptype, Values: rule}})
	return err
}

// RemoveFilteredPolicy deletes the rules of ptype whose values from fieldIndex on equal
// fieldValues (an empty value matches anything). When the filter fixes the domain, the delete is
// scoped to that tenant; otherwise casbin asked for every tenant (e.g. DeleteUser) and gets it.
func (s *RuleStore) RemoveFilteredPolicy(_, ptype string, fieldIndex int, fieldValues ...string) error {
	if fieldIndex < 0 || fieldIndex+len(fieldValues) > maxRuleValues {
		return fmt.Errorf("casbin adapter: filter on fields %d..%d, only v0..v5 exist", fieldIndex, fieldIndex+len(fieldValues)-1)
	}
	dom, err := domainIndex(ptype)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adapterTimeout)
	defer cancel()
	tenant := ""
	if i := dom - fieldIndex; i >= 0 && i < len(fieldValues) {
		tenant = fieldValues[i]
	}
	return s.db.writing(ctx).Transaction(func(tx *gorm.DB) error {
		q, bump := tx.Where("ptype = ?", ptype), tx.Model(&tenantRow{})
		if tenant != "" {
			q, bump = q.Where("tenant_id = ?", tenant), bump.Where("tenant_id = ?", tenant)
		} else {
			bump = bump.Where("1 = 1")
		}
		if err := bump.UpdateColumn("policy_revision", gorm.Expr("policy_revision + 1")).Error; err != nil {
			return fmt.Errorf("remove filtered policy: %w", err)
		}
		for i, v := range fieldValues {
			if v != "" {
				q = q.Where(fmt.Sprintf("v%d = ?", fieldIndex+i), v)
			}
		}
		if err := q.Delete(&ruleRow{}).Error; err != nil {
			return fmt.Errorf("remove filtered policy: %w", err)
		}
		return nil
	})
}
