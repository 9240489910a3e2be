package anthropic_test

import (
	"context"
	"fmt"
	"log"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/bgexec/bgexec"
	bganthropic "github.com/bgexec/bgexec/contrib/anthropic"
)

// The tool runner runs the model's exec and process calls through bgexec.
// (Compiled, not run: it calls the API.)
func ExampleTools() {
	ctx := context.Background()
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(ctx)

	client := anthropic.NewClient() // reads ANTHROPIC_API_KEY
	runner := client.Beta.Messages.NewToolRunner(bganthropic.Tools(reg.Scope("agent")), anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     anthropic.ModelClaudeSonnet5_5,
			MaxTokens: 4096,
			Messages: []anthropic.BetaMessageParam{
				anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Start the dev server and tell me when it listens.")),
			},
			// One tool call at a time: a list never misses a session an
			// exec of the same message starts.
			ToolChoice: anthropic.BetaToolChoiceUnionParam{
				OfAuto: &anthropic.BetaToolChoiceAutoParam{DisableParallelToolUse: anthropic.Bool(true)},
			},
		},
	})
	msg, err := runner.RunToCompletion(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(msg.Content[0].Text)
}
